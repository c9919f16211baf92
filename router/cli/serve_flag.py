"""What a row of ``corral serve``'s flags (:mod:`router.cli.serve_flags`) says, and how it is read.

A row is a flag's spellings, its help, its variable, its default and its ``dest``: the
:class:`~router.settings.ServeSettings` field it fills, or the name a named derivation of
:mod:`router.settings` reads it by. This module adds the rows to a parser (their help and
defaults, variables included) and reads the parsed values back by ``dest``, each through its
row's ``setting`` (a conversion, a check).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.llama_build import version_line
from corral.options.table import parse_bool, parse_size
from router.cli.help import terminal_text
from router.security.api_keys import parse_list

__all__ = [
    "CompletionBash",
    "MmprojAuto",
    "PrintAndExit",
    "ServeFlag",
    "add_serve_flags",
    "at_least_zero",
    "body_size",
    "cluster_address",
    "default_setting",
    "directory",
    "existing_file",
    "existing_files",
    "flag_values",
    "names",
    "route_prefix",
    "size",
]


class MmprojAuto(argparse.Action):
    """``--mmproj-auto`` on, ``--no-mmproj`` off; unset leaves it to presets (and the
    ``LLAMA_ARG_MMPROJ_AUTO`` variable, read with the per-model options)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, "true" if option == "--mmproj-auto" else "false")


class PrintAndExit(argparse.Action):
    """llama-server's flags that answer and exit: ``--version``, ``-cl``/``--cache-list``."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        if option == "--version":
            print(version_line())
            parser.exit(0)
        from router.cli.commands import run_cache_command  # the hub cache's code, only here

        parser.exit(run_cache_command("ls", []))  # the hub cache's models, as `corral ls`


class CompletionBash(argparse.Action):
    """``--completion-bash``: print Corral's bash completion script and exit, as llama-server
    prints its own."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        from router.cli.completion import bash_completion  # every command's parser, only here

        sys.stdout.write(bash_completion(parser))
        parser.exit(0)


# What a flag's value becomes in the settings, given the flag as the user may have spelled it
# (for the message): a ValueError stops startup with its text.
Setting = Callable[[str, Any], Any]


@dataclass(frozen=True, slots=True)
class ServeFlag:
    group: str  # the --help section, in the order first named
    spellings: tuple[str, ...]
    # The ServeSettings field it fills, or the name a derivation (router.settings) reads it by.
    dest: str
    help: str  # Markdown: --help drops the backticks, docs/configuration.md keeps them
    variable: str = ""  # the environment variable it falls back to; "": none
    default: Any = None  # when the variable is unset
    metavar: str | None = None  # the placeholder shown instead of argparse's
    shown: str = ""  # the default as --help says it, when words say it better than the value
    convert: Callable[[str], Any] | None = None  # argparse's type
    setting: Setting | None = None  # the value into the setting: converted, checked
    action: str | type[argparse.Action] | None = None
    choices: tuple[str, ...] | None = None
    nargs: int | None = None
    # False: the variable is read after parsing, when the flag is absent (a list flag, which
    # argparse would append to; a token, which --help must not show).
    reads_variable: bool = True
    # As upstream, a variable that turns the flag off when set to anything.
    off_variable: str = ""
    exits: bool = False  # answers and exits (--version): fills no setting


def at_least_zero(words: str) -> Setting:
    """A number of at least 0; ``words`` say what else it may be (``0 (never) or …``)."""

    def check(flag: str, value: float) -> float:
        if value < 0:
            raise ValueError(f"{flag} must be {words}")
        return value

    return check


def directory(flag: str, path: Path | None) -> Path | None:
    if path is not None and not path.is_dir():
        raise ValueError(f"{flag} {path} is not a directory")
    return path


def existing_file(flag: str, path: Path | None) -> Path | None:
    if path is not None and not path.is_file():
        raise ValueError(f"{flag} {path}: no such file")
    return path


def existing_files(flag: str, paths: list[Path]) -> list[Path]:
    return [existing_file(flag, path) or path for path in paths]


def names(flag: str, text: str | None) -> tuple[str, ...]:
    return tuple(parse_list(text or ""))


def size(flag: str, text: str | None) -> int:
    try:
        return parse_size(text) if text else 0
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


def body_size(flag: str, text: str) -> int:
    if (body := size(flag, text)) < 1:
        raise ValueError(f"{flag} must be at least 1 byte")
    return body


def cluster_address(flag: str, text: str | None) -> str | None:
    """``ray`` or ``ray://HOST:PORT`` into the address ``ray.init`` joins; None: no cluster.

    ``ray`` alone is Ray's own choice made explicit: ``RAY_ADDRESS``, else the cluster started
    on this machine (``auto``). ``ray://HOST:PORT`` is the head's GCS address (what
    ``ray start --address`` takes), not Ray Client's: the router is a driver of the cluster.
    """
    if text is None or not text.strip():
        return None
    scheme, _, address = text.strip().partition("://")
    if scheme != "ray" or (_ and not address):
        raise ValueError(f"{flag} must be ray or ray://HOST:PORT, got '{text}'")
    if importlib.util.find_spec("ray") is None:  # found, not imported: only the service does
        raise ValueError(f"{flag} needs Ray: pip install 'corral[cluster]' (docs/scaling.md)")
    return address or os.environ.get("RAY_ADDRESS") or "auto"


def route_prefix(flag: str, text: str) -> str:
    # As llama-server, which prepends it to every route: "v2", "/v2" and "/v2/" are one.
    return "/" + text.strip("/") if text.strip("/") else ""


def _env_bool(name: str, default: bool) -> bool:
    try:
        return parse_bool(os.environ.get(name, "").strip())
    except ValueError:
        return default  # unset or not an on/off word: as if unset


def _default(flag: ServeFlag) -> Any:
    """The flag's default, or its variable's value when that is set."""
    if not flag.variable or not flag.reads_variable:
        # A fresh list per parser: an unused flag's namespace holds the default object itself.
        return list(flag.default) if isinstance(flag.default, list) else flag.default
    if flag.off_variable and flag.off_variable in os.environ:
        return False
    if isinstance(flag.default, bool):
        return _env_bool(flag.variable, flag.default)
    if flag.convert in (int, float):
        value = os.environ.get(flag.variable)  # as if unset when empty
        return flag.convert(value) if value else flag.default
    return os.environ.get(flag.variable, flag.default)


def _shown(flag: ServeFlag, default: object) -> object:
    if flag.shown:
        return flag.shown
    if default is None or default == []:
        return "none"
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, float) and default.is_integer():
        return int(default)
    return default


def _help(flag: ServeFlag, default: object) -> str:
    """The ``--help`` line of a flag: its meaning, its default and its variable."""
    if flag.exits:  # an action, not a setting: it has no default to show
        return terminal_text(flag.help)
    text = f"{terminal_text(flag.help)} (default: {_shown(flag, default)})"
    return text + (f" [{flag.variable}]" if flag.variable else "")


def add_serve_flags(parser: argparse.ArgumentParser, flags: tuple[ServeFlag, ...]) -> None:
    """Each row as a flag, in a section per group."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for flag in flags:
        if flag.group not in groups:
            groups[flag.group] = parser.add_argument_group(flag.group)
        keywords: dict[str, Any] = {
            "type": flag.convert,
            "action": flag.action,
            "choices": flag.choices,
            "nargs": flag.nargs,
            "metavar": flag.metavar,
        }
        given = {key: value for key, value in keywords.items() if value is not None}
        action = groups[flag.group].add_argument(
            *flag.spellings, dest=flag.dest, default=_default(flag), **given
        )
        action.help = _help(flag, action.default)


def _given_or_variable(flag: ServeFlag, value: Any) -> Any:
    """A variable read after parsing: taken only when the flag is absent."""
    if flag.reads_variable or not flag.variable:
        return value
    if flag.action == "append":
        text = os.environ.get(flag.variable)
        return value if value is not None else [text] if text else []
    return value or os.environ.get(flag.variable)


def flag_values(args: argparse.Namespace, flags: tuple[ServeFlag, ...]) -> dict[str, Any]:
    """Every row's value by ``dest``, through its ``setting``; a ValueError says which is wrong."""
    values = {}
    for flag in flags:
        if not flag.exits:
            value = _given_or_variable(flag, getattr(args, flag.dest))
            values[flag.dest] = flag.setting(flag.spellings[0], value) if flag.setting else value
    return values


def default_setting(flags: tuple[ServeFlag, ...], dest: str) -> Any:
    """The setting a row gives when neither its flag nor its variable is: a settings default."""
    flag = next(flag for flag in flags if flag.dest == dest)
    value = list(flag.default) if isinstance(flag.default, list) else flag.default
    return flag.setting(flag.spellings[0], value) if flag.setting else value
