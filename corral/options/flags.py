"""Per-model options as command-line flags, generated from the one option table.

``corral serve`` takes them as defaults for every model (docs/protocol.md §7) and
``python -m worker`` takes them as its own settings, so any option a preset or the router can
render is a flag the worker parses, spelled as llama-server spells it (``-c``, ``--ctx-size``,
``--no-mmap``, …).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from corral.options.help import MODEL_OPTION_HELP
from corral.options.table import OPTIONS, OptionError, OptionSpec, normalise_options

__all__ = ["add_model_flags", "flag_spelling", "model_options_from", "option_flags"]

WORKER_OPTIONS: tuple[OptionSpec, ...] = tuple(spec for spec in OPTIONS if spec.role == "worker")
_ENV_PREFIXES = ("LLAMA_ARG_", "__PRESET_")
# What a list's items are, where they are not files.
_LIST_ITEMS = {
    "rpc": "HOST:PORT",
    "device": "DEV",
    "spec-draft-device": "DEV",
    "override-tensor": "PATTERN=TYPE",
    "dry-sequence-breaker": "STRING",
}
_METAVARS = {"on-off": "on|off", "numbers": "N0,N1,..."}


# Longer spellings llama-server also writes with one dash: its four- and five-letter short
# options and -no-kvu; a name here (fit) is also a flag with one dash.
_ONE_DASH = frozenset(
    {"cram", "hfrd", "ngld", "no-kvu"}
    | {"fit", "fitt", "fitc", "cmoe", "ncmoe", "ncffn", "nkvo", "devd"}  # GPU (issue 26)
)


def flag_spelling(spelling: str) -> str:
    """An option spelling as a flag: ``c`` → ``-c``, ``ctx-size`` → ``--ctx-size``."""
    # llama-server spells its short options with one dash, even the multi-letter ones (-ngl).
    return f"-{spelling}" if len(spelling) <= 3 or spelling in _ONE_DASH else f"--{spelling}"


def option_flags(spec: OptionSpec) -> list[str]:
    """An option's flags, long name first: ``--ctx-size -c``, ``--fit -fit``."""
    flags = [f"--{spec.name}", *([f"-{spec.name}"] if spec.name in _ONE_DASH else [])]
    return flags + [flag_spelling(s) for s in spec.spellings if not s.startswith(_ENV_PREFIXES)]


def _dest(spec: OptionSpec) -> str:
    return "opt_" + spec.name.replace("-", "_")


def _env_name(spec: OptionSpec) -> str | None:
    return next((s for s in spec.spellings if s.startswith("LLAMA_ARG_")), None)


def _help(spec: OptionSpec) -> str:
    # Plain text for a terminal: the descriptions are Markdown, and argparse formats with %.
    text = MODEL_OPTION_HELP[spec.name].replace("`", "").replace("%", "%%")
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
        if spec.kind == "bool":
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
        elif spec.kind in ("list", "scaled-list"):
            # Repeatable as upstream's --lora; the values are joined into one comma list.
            metavar = (
                "FILE:SCALE" if spec.kind == "scaled-list" else _LIST_ITEMS.get(spec.name, "FILE")
            )
            group.add_argument(
                *flags, dest=_dest(spec), metavar=metavar, action="append", help=help_
            )
        else:
            metavar = (
                "|".join(spec.literals)
                if spec.kind == "choice"
                else _METAVARS.get(spec.kind, spec.kind.upper())
            )
            group.add_argument(*flags, dest=_dest(spec), metavar=metavar, default=None, help=help_)


def model_options_from(
    args: argparse.Namespace, parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The options given as flags, else as ``LLAMA_ARG_*`` variables, validated and normalised."""
    env = os.environ if env is None else env
    given: list[tuple[str, str]] = []
    for spec in WORKER_OPTIONS:
        value = getattr(args, _dest(spec))
        if isinstance(value, list):
            value = ",".join(value)
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
