"""``corral serve --completion-bash``: Corral's bash completion script, printed.

As llama-server's flag of that name, the script goes to stdout for the caller to keep
(``corral serve --completion-bash > ~/.local/share/bash-completion/completions/corral``). It
completes the commands, each command's flags (``corral serve``'s: its own, the option table's,
the shortcuts and the accepted no-effect ones) and the values of a flag with a fixed set of
them; anything else falls back to file names. The flags are read from the parsers themselves,
so the script never lags a new flag. ``corral rpc-server``'s parser belongs to the worker's
process, which the router never imports: its ``--help`` is read from that process instead.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys

from router.cli.commands import cache_command_parsers
from router.cli.help import COMMAND_SUMMARIES

__all__ = ["bash_completion", "flags_in_help"]

# An option line of argparse's help: indented, the spellings (and their placeholders), then
# two spaces or the line's end before the description.
_OPTION_LINE = re.compile(r"^ {2}(-\S.*?)(?: {2,}|$)")
_SCRIPT = """\
# bash completion for corral, from: corral serve --completion-bash > FILE
# (~/.local/share/bash-completion/completions/corral, or any file bash sources)
_corral() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    if (( COMP_CWORD == 1 )); then
        COMPREPLY=($(compgen -W {commands} -- "$cur"))
        return 0
    fi
    local flags='' values=''
    case ${{COMP_WORDS[1]}} in
{cases}
    esac
    if [[ -n $values ]]; then
        COMPREPLY=($(compgen -W "$values" -- "$cur"))
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    else
        COMPREPLY=()  # -o default: file names
    fi
    return 0
}}
complete -o default -F _corral corral
"""


def flags_in_help(text: str) -> list[str]:
    """The option spellings an argparse ``--help`` lists, in its order."""
    flags: list[str] = []
    for line in text.splitlines():
        found = _OPTION_LINE.match(line)
        if found:
            flags += [part.split()[0] for part in found[1].split(", ")]
    return flags


def _rpc_server_flags() -> list[str]:
    command = [sys.executable, "-m", "worker.rpc", "--help"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    return flags_in_help(done.stdout)


def _case(command: str, flags: list[str], parser: argparse.ArgumentParser | None) -> str:
    lines = [f"        {command})", f"            flags={shlex.quote(' '.join(flags))}"]
    valued = [
        action
        for action in (parser._actions if parser is not None else [])
        if action.choices and action.option_strings
    ]
    if valued:
        lines.append("            case $prev in")
        for action in valued:
            words = shlex.quote(" ".join(str(choice) for choice in action.choices or ()))
            lines.append(f"                {'|'.join(action.option_strings)}) values={words} ;;")
        lines.append("            esac")
    lines[-1] += " ;;"
    return "\n".join(lines)


def bash_completion(serve: argparse.ArgumentParser) -> str:
    """The script, ``serve`` being ``corral serve``'s parser."""
    parsers = {"serve": serve, **cache_command_parsers()}
    cases = []
    for command in COMMAND_SUMMARIES:
        parser = parsers.get(command)
        if parser is None:  # rpc-server: a parser of the worker's process
            cases.append(_case(command, _rpc_server_flags(), None))
        else:
            cases.append(_case(command, list(parser._option_string_actions), parser))
    commands = shlex.quote(" ".join([*COMMAND_SUMMARIES, "--help"]))
    return _SCRIPT.format(commands=commands, cases="\n".join(cases))
