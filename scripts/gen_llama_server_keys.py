"""Write router/catalogue/llama_server_keys.py: every preset key llama-server accepts.

    .venv/bin/python scripts/gen_llama_server_keys.py PATH/TO/llama.cpp/common/arg.cpp

A preset key is any spelling of an option llama-server parses (``common/preset.cpp``,
``get_map_key_opt``): its flags without dashes, its negative flags, its environment variable
and, for an option with a negative flag, the ``LLAMA_ARG_NO_*`` variant. The options are those
``common_params_parser_init`` keeps for ``LLAMA_EXAMPLE_SERVER``: tagged for the server or for
every program, and not excluded from the server. Run it against the arg.cpp of the llama.cpp
that llama-cpp-python vendors when the pinned version changes.

The keys of the options arg.cpp marks ``.set_sampling()`` are written apart too: upstream's
remote-preset whitelist starts from them (router/catalogue/remote_presets.py).
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

__all__ = [
    "ENV",
    "call_arguments",
    "main",
    "sampling_keys",
    "server_keys",
    "serves",
    "without_comments",
]

TARGET = Path(__file__).resolve().parent.parent / "router" / "catalogue" / "llama_server_keys.py"
_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//[^\n]*|/\*.*?\*/', re.S)
_LISTS = re.compile(r"\s*\{([^{}]*)\}\s*,\s*(?:\{([^{}]*)\}\s*,)?")
_EXAMPLES = re.compile(r"\.set_(examples|excludes)\(\{([^}]*)\}\)")
ENV = re.compile(r'\.set_env\("([^"]*)"\)')
_OPEN, _CLOSE = "([{", ")]}"


def without_comments(source: str) -> str:
    return _STRING_OR_COMMENT.sub(lambda m: "" if m[0].startswith("/") else m[0], source)


def call_arguments(source: str, open_paren: int) -> tuple[list[str], int]:
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


def serves(calls: str) -> bool:
    """Whether an option whose ``.set_examples``/``.set_excludes`` calls are in ``calls`` is one
    ``common_params_parser_init`` keeps for ``LLAMA_EXAMPLE_SERVER``."""
    tags = {kind: set(re.findall(r"LLAMA_EXAMPLE_\w+", names)) for kind, names in
            _EXAMPLES.findall(calls)}  # fmt: skip
    examples = tags.get("examples", {"LLAMA_EXAMPLE_COMMON"})
    if not examples & {"LLAMA_EXAMPLE_SERVER", "LLAMA_EXAMPLE_COMMON"}:
        return False
    return "LLAMA_EXAMPLE_SERVER" not in tags.get("excludes", set())


def _server_options(arg_cpp: str) -> list[tuple[set[str], bool]]:
    """Every option llama-server parses: its preset keys, and whether it is a sampling one."""
    source = without_comments(arg_cpp)
    options: list[tuple[set[str], bool]] = []
    for call in re.finditer(r"add_opt\(common_arg\(", source):
        # The whole add_opt(...): the option, then its .set_examples/.set_env calls.
        block = source[call.end() : call_arguments(source, call.start() + len("add_opt"))[1]]
        lists = _LISTS.match(block)
        assert lists is not None, block[:80]
        args = re.findall(r'"([^"]*)"', lists[1])
        negatives = re.findall(r'"([^"]*)"', lists[2] or "")
        if not serves(block):
            continue
        keys = {flag.lstrip("-") for flag in (*args, *negatives)}
        for env in ENV.findall(block):
            keys.add(env)
            if negatives:
                keys.add(env.replace("LLAMA_ARG_", "LLAMA_ARG_NO_"))
        options.append((keys, ".set_sampling()" in block))
    return options


def server_keys(arg_cpp: str) -> set[str]:
    return {key for keys, _ in _server_options(arg_cpp) for key in keys}


def sampling_keys(arg_cpp: str) -> set[str]:
    return {key for keys, sampling in _server_options(arg_cpp) if sampling for key in keys}


def _listing(name: str, keys: set[str]) -> str:
    body = textwrap.fill(" ".join(sorted(keys)), width=100, break_on_hyphens=False)
    return f'_{name} = """\n{body}\n"""\n'


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    arg_cpp = Path(sys.argv[1]).read_text(encoding="utf-8")
    keys, sampling = server_keys(arg_cpp), sampling_keys(arg_cpp)
    header = (
        '"""Every preset key llama-server accepts (made by scripts/gen_llama_server_keys.py).\n\n'
        "Flags without dashes, negative flags and environment names of the options llama-server\n"
        "parses, from the common/arg.cpp of the llama.cpp llama-cpp-python vendors. A preset key\n"
        "in here that Corral's option table does not know is accepted with a notice that it has\n"
        "no effect (docs/serving.md), never a startup error. The keys of the options arg.cpp\n"
        "marks as sampling ones are listed apart too: upstream's remote-preset whitelist starts\n"
        'from them (router/catalogue/remote_presets.py).\n"""\n\n'
        '__all__ = ["LLAMA_SERVER_KEYS", "LLAMA_SERVER_SAMPLING_KEYS"]\n\n'
    )
    listing = (
        _listing("KEYS", keys)
        + "\n"
        + _listing("SAMPLING_KEYS", sampling)
        + "\nLLAMA_SERVER_KEYS = frozenset(_KEYS.split())\n"
        + "LLAMA_SERVER_SAMPLING_KEYS = frozenset(_SAMPLING_KEYS.split())\n"
    )
    TARGET.write_text(header + listing, encoding="utf-8")
    print(f"wrote {len(keys)} keys ({len(sampling)} of sampling options) to {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
