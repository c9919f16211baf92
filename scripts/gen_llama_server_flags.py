"""Write corral/options/llama_server_flags.py: every flag of llama-server's ``--help``.

    .venv/bin/python scripts/gen_llama_server_flags.py PATH/TO/llama_cpp_python-VERSION

The argument is the unpacked sdist of the pinned llama-cpp-python (``pip download
--no-deps --no-binary :all: llama-cpp-python==VERSION``): the flags are read from its
``vendor/llama.cpp/common/arg.cpp``, and the table records the sdist's version and the llama.cpp
commit it vendors (the submodule's ``HEAD`` in the sdist's ``.git``), which a test checks
against the installed llama-cpp-python. Run it again when the pin changes.

One line an option, as ``common_params_parser_init`` builds them for ``LLAMA_EXAMPLE_SERVER``:
``ARITY VARIABLE KIND SPELLING... [/ NEGATIVE...]``, where ARITY is how many values the option
takes (llama-server's value hints: none, ``N`` or ``START END``), VARIABLE its variable or
``-``, KIND ``sampling`` for the options arg.cpp marks ``.set_sampling()`` (upstream's
remote-preset whitelist starts from them) or ``-``, then its flags and, after a ``/``, its
negative flags, with their dashes. The census test
(tests/test_llama_server_census.py) gives each of them to ``corral serve`` and
``python -m worker``; the router's no-effect flags and preset keys are derived from the table.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

__all__ = ["main", "server_flags"]

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "corral" / "options" / "llama_server_flags.py"
_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//[^\n]*|/\*.*?\*/', re.S)
_EXAMPLES = re.compile(r"\.set_(examples|excludes)\(\{([^}]*)\}\)")
_ENV = re.compile(r'\.set_env\("([^"]*)"\)')
_VERSION = re.compile(r"^Version: (\S+)$", re.M)
_OPEN, _CLOSE = "([{", ")]}"


def _without_comments(source: str) -> str:
    return _STRING_OR_COMMENT.sub(lambda m: "" if m[0].startswith("/") else m[0], source)


def _call_arguments(source: str, open_paren: int) -> tuple[list[str], int]:
    """The top-level arguments of the call whose ``(`` is at ``open_paren``, and its ``)``."""
    depth, i, start, found = 0, open_paren, open_paren + 1, []
    while True:
        char = source[i]
        if char in "\"'":
            i = _STRING_OR_COMMENT.match(source, i).end()  # type: ignore[union-attr]
            continue
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth == 0:
                found.append(source[start:i].strip())
                return found, i
        elif char == "," and depth == 1:
            found.append(source[start:i].strip())
            start = i + 1
        i += 1


def _serves(calls: str) -> bool:
    """Whether an option whose ``.set_examples``/``.set_excludes`` calls are in ``calls`` is one
    ``common_params_parser_init`` keeps for ``LLAMA_EXAMPLE_SERVER``."""
    tags = {kind: set(re.findall(r"LLAMA_EXAMPLE_\w+", names)) for kind, names in
            _EXAMPLES.findall(calls)}  # fmt: skip
    examples = tags.get("examples", {"LLAMA_EXAMPLE_COMMON"})
    if not examples & {"LLAMA_EXAMPLE_SERVER", "LLAMA_EXAMPLE_COMMON"}:
        return False
    return "LLAMA_EXAMPLE_SERVER" not in tags.get("excludes", set())


def server_flags(arg_cpp: str) -> list[str]:
    """One table line (the module's docstring) for every option llama-server parses."""
    source = _without_comments(arg_cpp)
    lines: list[str] = []
    for call in re.finditer(r"add_opt\(common_arg\(", source):
        arguments, end = _call_arguments(source, call.end() - 1)
        # The whole add_opt(...) after the option: its .set_examples/.set_env calls.
        tail = source[end : _call_arguments(source, call.start() + len("add_opt"))[1]]
        if not _serves(tail):
            continue
        # {flags}, then {negative flags} where the option has them.
        lists = [re.findall(r'"([^"]*)"', a) for a in arguments if a.startswith("{")]
        # What is left: the value hints, the help text and the handler.
        arity = len(arguments) - len(lists) - 2
        env = _ENV.search(tail)
        kind = "sampling" if ".set_sampling()" in tail else "-"
        spellings = " ".join(lists[0]) + "".join(f" / {' '.join(n)}" for n in lists[1:])
        line = f"{arity} {env[1] if env else '-'} {kind} {spellings}"
        if line not in lines:  # -np is defined twice, with two help texts
            lines.append(line)
    return lines


def _vendored_commit(sdist: Path) -> str:
    """The llama.cpp commit the sdist vendors: its submodule's ``HEAD``."""
    head = (sdist / ".git" / "modules" / "vendor" / "llama.cpp" / "HEAD").read_text().strip()
    if not re.fullmatch(r"[0-9a-f]{40}", head):
        raise SystemExit(f"the sdist's llama.cpp HEAD is not a commit: {head!r}")
    return head


_HEADER = '''"""Every flag of llama-server's ``--help`` (made by scripts/gen_llama_server_flags.py).

From the common/arg.cpp of the llama.cpp llama-cpp-python vendors, one line an option:
how many values it takes, its variable (``-``: none), ``sampling`` for a sampling option, then
its spellings and, after a ``/``, its negative ones. ``python -m worker`` accepts each one it
does not implement with a notice (:mod:`corral.options.flags`), ``corral serve`` too
(:mod:`router.cli.no_effect`); the census test gives every one to both parsers.
"""

# ruff: noqa: E501 (one line an option, however long)

from __future__ import annotations

from typing import NamedTuple

__all__ = ["LLAMA_CPP_COMMIT", "LLAMA_CPP_PYTHON_VERSION", "LLAMA_SERVER_FLAGS", "LlamaServerFlag"]

# The sdist read, and the llama.cpp commit it vendors (tests/corral/options/ checks both
# against the installed llama-cpp-python).
LLAMA_CPP_PYTHON_VERSION = "{version}"
LLAMA_CPP_COMMIT = "{commit}"


class LlamaServerFlag(NamedTuple):
    arity: int  # how many values follow the flag
    env: str | None  # its LLAMA_ARG_* (or other) variable
    spellings: tuple[str, ...]  # with their dashes; negative spellings too, last
    negatives: tuple[str, ...]  # the negative spellings among them
    sampling: bool  # arg.cpp marks it a sampling option


def _flag(arity: str, env: str, kind: str, *spellings: str) -> LlamaServerFlag:
    slash = spellings.index("/") if "/" in spellings else len(spellings)
    return LlamaServerFlag(
        int(arity),
        None if env == "-" else env,
        spellings[:slash] + spellings[slash + 1 :],
        spellings[slash + 1 :],
        kind == "sampling",
    )


_FLAGS = """
'''
_FOOTER = '''
"""

LLAMA_SERVER_FLAGS: tuple[LlamaServerFlag, ...] = tuple(
    _flag(*line.split()) for line in _FLAGS.strip().splitlines()
)
'''


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    sdist = Path(sys.argv[1])
    version = _VERSION.search((sdist / "PKG-INFO").read_text(encoding="utf-8"))
    if version is None:
        raise SystemExit(f"{sdist / 'PKG-INFO'}: no Version line")
    arg_cpp = sdist / "vendor" / "llama.cpp" / "common" / "arg.cpp"
    lines = server_flags(arg_cpp.read_text(encoding="utf-8"))
    header = _HEADER.replace("{version}", version[1]).replace("{commit}", _vendored_commit(sdist))
    TARGET.write_text(header + "\n".join(lines) + _FOOTER, encoding="utf-8")
    print(f"wrote {len(lines)} options to {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
