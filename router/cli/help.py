"""The ``corral`` command's help and its answers to a typo: short, with a suggestion.

argparse prints its whole usage block before the one useful line; a newcomer who typed
``--prot`` needs the error, what was meant and where the help is, in at most three lines.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from corral.options.flags import ExactFlagParser, NotedFlag
from corral.suggest import closest, did_you_mean

__all__ = [
    "COMMAND_SUMMARIES",
    "FIRST_FLAGS",
    "SuggestingParser",
    "add_help_flags",
    "brief_help",
    "main_help",
    "terminal_text",
    "unknown_command",
]

# One line per command, shown by ``corral --help`` and as each command's description.
COMMAND_SUMMARIES: dict[str, str] = {
    "serve": "run the router: every local model behind one address, loaded on demand",
    "pull": "download a model into the hub cache, with speed and time left",
    "ls": "list every model a router would serve (hub cache, --models-dir, presets)",
    "rm": "delete one model's files from the hub cache",
    "ps": "the models a running router has loaded, with their memory, and its queue",
    "top": "watch a running router live: models, memory per device, requests, tokens/s",
    "rpc-server": "offer this machine's devices to a model on another machine (ggml RPC, "
    "trusted networks only)",
}

# What ``corral serve --help`` shows: the flags a first setup needs (where models come from,
# where to listen, keys, the context and the GPU, the log); ``--help-all`` shows all 200-odd,
# llama-server's included (issue 54).
FIRST_FLAGS = frozenset(
    {
        "--help",
        "--help-all",
        "--version",
        "--host",
        "--port",
        "--models-dir",
        "--model",
        "--hf-repo",
        "--models-preset",
        "--models-max",
        "--offline",
        "--list-devices",
        "--api-key",
        "--api-key-file",
        "--log-format",
        "--ctx-size",
        "--n-gpu-layers",
        "--parallel",
    }
)

_UNRECOGNISED = re.compile(r"unrecognized arguments: (?P<rest>.*)")


def terminal_text(markdown: str) -> str:
    """A Markdown description as plain text: the backticks go."""
    return markdown.replace("`", "").replace("%", "%%")  # argparse formats help with %


class SuggestingParser(ExactFlagParser):
    """An argparse parser whose errors are one line, plus the closest flag when one is close;
    it takes flags only as spelled, never a prefix of one."""

    def error(self, message: str) -> NoReturn:
        lines = [f"{self.prog}: error: {message}"]
        if found := _UNRECOGNISED.match(message):
            flags = [word for word in found["rest"].split() if word.startswith("-")]
            hints = [(flag, self._closest_flag(flag.split("=")[0])) for flag in flags]
            suggested = [
                f"{flag} → {near[0]}" if len(flags) > 1 else near[0] for flag, near in hints if near
            ]
            if suggested:
                lines.append(f"{self.prog}: did you mean {', '.join(suggested)}?")
        lines.append(f"Run '{self.prog} --help' for every flag.")
        sys.stderr.write("\n".join(lines) + "\n")
        sys.exit(2)

    def _closest_flag(self, typed: str) -> list[str]:
        # A flag that does something is the likelier meaning: --prot is --port, not --prio.
        actions = self._option_string_actions
        acting = [flag for flag, action in actions.items() if not isinstance(action, NotedFlag)]
        return closest(typed, acting, limit=1) or closest(typed, actions, limit=1)


def brief_help(parser: argparse.ArgumentParser) -> str:
    """``parser``'s help with only :data:`FIRST_FLAGS`, in their sections, and where the rest is."""
    formatter = parser._get_formatter()
    formatter.add_usage("%(prog)s [options]", [], [])
    formatter.add_text(parser.description)
    shown = 0
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if FIRST_FLAGS & set(a.option_strings)]
        if actions:
            formatter.start_section(group.title)
            formatter.add_arguments(actions)
            formatter.end_section()
            shown += len(actions)
    others = sum(1 for action in parser._actions if action.help != argparse.SUPPRESS) - shown
    formatter.add_text(
        f"{others} more flags (per-model options, scheduling, security, tools, llama-server's): "
        "corral serve --help-all, or docs/configuration.md. A flag beats its [VARIABLE]."
    )
    return formatter.format_help()


class _BriefHelp(argparse._HelpAction):  # a help action, as argparse's own, for its readers
    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        sys.stdout.write(brief_help(parser))
        parser.exit(0)


def add_help_flags(parser: argparse.ArgumentParser) -> None:
    """``-h``/``--help`` (and llama-server's ``--usage``) brief, ``--help-all`` everything: a
    parser made with ``add_help=False`` gets them here."""
    parser.add_argument("-h", "--help", action=_BriefHelp, help="the flags most setups need")
    parser.add_argument("--usage", action=_BriefHelp, help=argparse.SUPPRESS)
    parser.add_argument("--help-all", action="help", help="every flag, llama-server's included")


def main_help() -> str:
    width = max(len(name) for name in COMMAND_SUMMARIES)
    rows = [f"  {name:<{width}}  {summary}" for name, summary in COMMAND_SUMMARIES.items()]
    return "\n".join(
        [
            "usage: corral COMMAND [options]",
            "",
            "Corral serves local GGUF models behind one OpenAI-compatible address.",
            "",
            "commands:",
            *rows,
            "",
            "'corral COMMAND --help' describes a command's flags (docs/configuration.md: all);",
            "'corral --version' prints Corral's version and the llama.cpp it runs.",
        ]
    )


def unknown_command(command: str) -> NoReturn:
    hint = did_you_mean(command, COMMAND_SUMMARIES)
    sys.stderr.write(
        f"corral: unknown command '{command}'{hint}\nRun 'corral --help' for the commands.\n"
    )
    sys.exit(2)
