"""Write corral/options/llama_server_flags.py: every flag of llama-server's ``--help``.

    .venv/bin/python scripts/gen_llama_server_flags.py PATH/TO/llama.cpp/common/arg.cpp

One line an option, as ``common_params_parser_init`` builds them for ``LLAMA_EXAMPLE_SERVER``
(the options ``scripts/gen_llama_server_keys.py`` takes its preset keys from):
``ARITY ENV SPELLING...``, where ARITY is how many values the option takes (llama-server's
value hints: none, ``N`` or ``START END``), ENV its variable or ``-``, and the spellings are
its flags then its negative flags, with their dashes. The census test
(tests/corral/options/test_llama_server_census.py) gives each of them to ``corral serve`` and
``python -m worker``. Run it again when the pinned llama.cpp changes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The same reading of arg.cpp as the preset keys'.
from scripts.gen_llama_server_keys import ENV, call_arguments, serves, without_comments  # noqa: E402

__all__ = ["main", "server_flags"]

TARGET = ROOT / "corral" / "options" / "llama_server_flags.py"


def server_flags(arg_cpp: str) -> list[tuple[int, str, list[str]]]:
    """(arity, variable or "-", spellings) of every option llama-server parses."""
    source = without_comments(arg_cpp)
    options: list[tuple[int, str, list[str]]] = []
    for call in re.finditer(r"add_opt\(common_arg\(", source):
        arguments, end = call_arguments(source, call.end() - 1)
        # The whole add_opt(...) after the option: its .set_examples/.set_env calls.
        tail = source[end : call_arguments(source, call.start() + len("add_opt"))[1]]
        if not serves(tail):
            continue
        lists = [a for a in arguments if a.startswith("{")]
        spellings = [s for listed in lists for s in re.findall(r'"([^"]*)"', listed)]
        # What is left: the value hints, the help text and the handler.
        arity = len(arguments) - len(lists) - 2
        env = ENV.search(tail)
        options.append((arity, env[1] if env else "-", spellings))
    return options


_HEADER = '''"""Every flag of llama-server's ``--help`` (made by scripts/gen_llama_server_flags.py).

From the common/arg.cpp of the llama.cpp llama-cpp-python vendors, one line an option:
how many values it takes, its variable (``-``: none), then its spellings, negative ones
included. ``python -m worker`` accepts each one it does not implement with a notice
(:mod:`corral.options.flags`); the census test gives every one to both parsers.
"""

# ruff: noqa: E501 (one line an option, however long)

from __future__ import annotations

from typing import NamedTuple

__all__ = ["LLAMA_SERVER_FLAGS", "LlamaServerFlag"]


class LlamaServerFlag(NamedTuple):
    arity: int  # how many values follow the flag
    env: str | None  # its LLAMA_ARG_* (or other) variable
    spellings: tuple[str, ...]  # with their dashes; negative spellings too


_FLAGS = """
'''
_FOOTER = '''
"""

LLAMA_SERVER_FLAGS: tuple[LlamaServerFlag, ...] = tuple(
    LlamaServerFlag(int(arity), None if env == "-" else env, tuple(spellings))
    for arity, env, *spellings in (line.split() for line in _FLAGS.strip().splitlines())
)
'''


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    options = server_flags(Path(sys.argv[1]).read_text(encoding="utf-8"))
    seen: set[str] = set()
    lines = []
    for arity, env, spellings in options:
        line = f"{arity} {env} {' '.join(spellings)}"
        if line not in seen:  # -np is defined twice, with two help texts
            seen.add(line)
            lines.append(line)
    TARGET.write_text(_HEADER + "\n".join(lines) + _FOOTER, encoding="utf-8")
    print(f"wrote {len(lines)} options to {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
