"""Per-model options as command-line flags, generated from the one option table.

``corral serve`` takes them as defaults for every model (docs/protocol.md §7) and
``python -m worker`` takes them as its own settings, so any option a preset or the router can
render is a flag the worker parses, spelled as llama-server spells it (``-c``, ``--ctx-size``,
``--no-mmap``, …). Both parse with :class:`ExactFlagParser`: a flag only as spelled, as
llama-server matches them; a llama-server flag the worker does not implement is accepted with
a notice (:func:`add_other_llama_server_flags`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import Any

from corral.options.kinds import KINDS
from corral.options.llama_server_flags import LLAMA_SERVER_FLAGS, LlamaServerFlag
from corral.options.sampling_fields import DRY_SEQUENCE_BREAKERS, LOGIT_BIAS
from corral.options.table import OPTIONS, OptionError, OptionSpec, normalise_options

__all__ = [
    "ExactFlagParser",
    "NotedFlag",
    "add_model_flags",
    "add_other_llama_server_flags",
    "flag_spelling",
    "model_options_from",
    "option_flags",
    "other_flags_given",
    "undefined_llama_server_flags",
]

WORKER_OPTIONS: tuple[OptionSpec, ...] = tuple(spec for spec in OPTIONS if spec.role == "worker")
_ENV_PREFIXES = ("LLAMA_ARG_", "__PRESET_")
# What a list's items are, where they are not files.
_LIST_ITEMS = {
    "rpc": "HOST:PORT",
    "override-kv": "KEY=TYPE:VALUE",
    "device": "DEV",
    "spec-draft-device": "DEV",
    "override-tensor": "PATTERN=TYPE",
    DRY_SEQUENCE_BREAKERS.option: "STRING",
    "reverse-prompt": "PROMPT",
    LOGIT_BIAS.option: "TOKEN_ID(+/-)BIAS",
}


class ExactFlagParser(argparse.ArgumentParser):
    """An argparse parser that takes a flag only as spelled (and ``--flag=value``).

    argparse reads a flag it does not know as a known one's prefix, or as a one-dash flag with
    its value glued on: ``-cmoe`` as ``-c`` or ``-cmoed``, ``-l`` as ``-lv``. llama-server
    matches flags exactly, and ``allow_abbrev=False`` leaves one-dash prefixes on in Python
    3.11, so the matching itself is switched off: an unknown flag is refused by name.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.add_help:  # llama-server's third spelling of --help
            self.add_argument("--usage", action="help", help=argparse.SUPPRESS)

    def _get_option_tuples(self, option_string: str) -> list[Any]:
        return []


_LLAMA_SPELLINGS = frozenset(s for flag in LLAMA_SERVER_FLAGS for s in flag.spellings)


def flag_spelling(spelling: str) -> str:
    """An option spelling as a flag: ``c`` → ``-c``, ``ctx-size`` → ``--ctx-size``, ``ui`` →
    ``--ui``: as llama-server spells it, else one dash for a short one (up to 3 letters)."""
    for dashes in ("-", "--"):
        if dashes + spelling in _LLAMA_SPELLINGS:
            return dashes + spelling
    return f"-{spelling}" if len(spelling) <= 3 else f"--{spelling}"


def option_flags(spec: OptionSpec) -> list[str]:
    """An option's flags, long name first: ``--ctx-size -c``, ``--fit -fit``."""
    # llama-server also spells some names with one dash (-fit): the name's both spellings.
    flags = [f"--{spec.name}", *([f"-{spec.name}"] if f"-{spec.name}" in _LLAMA_SPELLINGS else [])]
    return flags + [flag_spelling(s) for s in spec.spellings if not s.startswith(_ENV_PREFIXES)]


def _dest(spec: OptionSpec) -> str:
    return "opt_" + spec.name.replace("-", "_")


def _env_name(spec: OptionSpec) -> str | None:
    return next((s for s in spec.spellings if s.startswith("LLAMA_ARG_")), None)


def _help(spec: OptionSpec) -> str:
    # Plain text for a terminal: the descriptions are Markdown, and argparse formats with %.
    text = spec.help.replace("`", "").replace("%", "%%")
    negatives = [flag_spelling(n) for n in spec.negatives if not n.startswith(_ENV_PREFIXES)]
    if negatives:
        text += f"; off: {', '.join(negatives)}"
    env = _env_name(spec)
    return text + (f" [{env}]" if env else "")


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "per-model options",
        "defaults for every model (a preset section beats them); unset: the worker's default "
        "(docs/configuration.md lists each)",
    )
    for spec in WORKER_OPTIONS:
        flags = option_flags(spec)
        help_ = _help(spec)
        takes = KINDS[spec.kind].takes
        if takes == "switch":
            group.add_argument(
                *flags,
                dest=_dest(spec),
                action="store_const",
                const="true",
                default=None,
                help=help_,
            )
            for negative in spec.negatives:
                if not negative.startswith(_ENV_PREFIXES):
                    group.add_argument(
                        flag_spelling(negative),
                        dest=_dest(spec),
                        action="store_const",
                        const="false",
                        help=argparse.SUPPRESS,
                    )
        elif takes == "two":  # two values after the flag, as upstream's
            group.add_argument(
                *flags, dest=_dest(spec), nargs=2, metavar=("START", "END"), help=help_
            )
        elif takes == "repeated":
            # Repeatable as upstream's --lora; the values are joined into one comma list.
            metavar = _LIST_ITEMS.get(spec.name) or KINDS[spec.kind].metavar(spec)
            group.add_argument(
                *flags, dest=_dest(spec), metavar=metavar, action="append", help=help_
            )
        else:
            metavar = KINDS[spec.kind].metavar(spec)
            group.add_argument(*flags, dest=_dest(spec), metavar=metavar, default=None, help=help_)


def model_options_from(
    args: argparse.Namespace, parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The options given as flags, else as ``LLAMA_ARG_*`` variables, validated and normalised."""
    env = os.environ if env is None else env
    given: list[tuple[str, str]] = []
    for spec in WORKER_OPTIONS:
        value = getattr(args, _dest(spec))
        if isinstance(value, list):  # a repeated flag's values, as one text
            value = KINDS[spec.kind].join(value)
        if value is not None:
            given.append((spec.name, value))
        elif any(n in env for n in spec.negatives if n.startswith("LLAMA_ARG_NO_")):
            given.append((spec.name, "false"))  # upstream: set to anything, it means "off"
        elif (name := _env_name(spec)) and name in env:
            given.append((name, env[name]))
    try:
        return normalise_options(given, where="command line")
    except OptionError as error:
        parser.error(str(error))


_OTHER_DEST = "other_llama_server_flags"


class NotedFlag(argparse.Action):
    """A flag without effect: records its first spelling in ``dest`` (once), drops its value."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        noted: list[str] = list(getattr(namespace, self.dest, None) or [])
        if self.option_strings[0] not in noted:
            noted.append(self.option_strings[0])
        setattr(namespace, self.dest, noted)


def undefined_llama_server_flags(parser: argparse.ArgumentParser) -> list[LlamaServerFlag]:
    """The llama-server flags none of whose spellings ``parser`` defines, in arg.cpp's order.

    A partly defined one is left out too: its other spellings are refused, which the census
    test catches.
    """
    defined = parser._option_string_actions
    return [f for f in LLAMA_SERVER_FLAGS if not any(s in defined for s in f.spellings)]


def add_other_llama_server_flags(parser: argparse.ArgumentParser) -> None:
    """Every llama-server flag the parser does not define, taken with its arity and noted.

    A worker run alone is handed llama-server command lines whose server-wide flags
    (``--models-dir``, ``--threads-http``, …) it has no use for; each consumes its values, so
    that they are not read as something else, and :func:`other_flags_given` names it.
    """
    for flag in undefined_llama_server_flags(parser):
        parser.add_argument(
            *flag.spellings,
            dest=_OTHER_DEST,
            action=NotedFlag,
            nargs=flag.arity,
            default=[],
            help=argparse.SUPPRESS,
        )


def other_flags_given(args: argparse.Namespace) -> tuple[str, ...]:
    """The flags :func:`add_other_llama_server_flags` took, by first spelling, in order."""
    return tuple(getattr(args, _OTHER_DEST, None) or ())
