"""Rewrite corral/options/llama_server_flags.py's table: every flag of llama-server's ``--help``.

    .venv/bin/python scripts/gen_llama_server_flags.py PATH/TO/llama_cpp_python-VERSION

The argument is the unpacked sdist of the pinned llama-cpp-python (``pip download
--no-deps --no-binary :all: llama-cpp-python==VERSION``): the flags are read from its
``vendor/llama.cpp/common/arg.cpp``, and the table records the sdist's version and the llama.cpp
commit it vendors (the submodule's ``HEAD`` in the sdist's ``.git``), which a test checks
against the installed llama-cpp-python. Only those three are rewritten; the module's code is
its own. Run it again when the pin changes.

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


def _rewritten(text: str, version: str, commit: str, lines: list[str]) -> str:
    """TARGET with its version, commit and table replaced; the rest of it (the tuple's type,
    how a line is read) is written there by hand."""
    for pattern, value in (
        (r'^LLAMA_CPP_PYTHON_VERSION = "[^"]*"$', f'LLAMA_CPP_PYTHON_VERSION = "{version}"'),
        (r'^LLAMA_CPP_COMMIT = "[^"]*"$', f'LLAMA_CPP_COMMIT = "{commit}"'),
        (r'^_FLAGS = """\n.*?^"""$', '_FLAGS = """\n' + "\n".join(lines) + '\n"""'),
    ):
        # A replacement string reads backslashes as escapes: none of the value's may be one.
        value = value.replace("\\", "\\\\")
        text, found = re.subn(pattern, value, text, count=1, flags=re.M | re.S)
        if not found:
            raise SystemExit(f"{TARGET}: nothing matches {pattern}")
    return text


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
    text = _rewritten(
        TARGET.read_text(encoding="utf-8"), version[1], _vendored_commit(sdist), lines
    )
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {len(lines)} options to {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
