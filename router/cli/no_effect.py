"""The llama-server flags ``corral serve`` accepts but does not act on.

A single-model llama-server command line carries flags such as ``--threads-http 4`` or
``--poll 50``; refusing them at startup would make Corral no drop-in. They are derived, not
listed: every flag of llama-server's ``--help`` (:mod:`corral.options.llama_server_flags`) that
the parser does not define by then (the router's own flags, the option table's, the shortcuts),
as ``python -m worker`` takes those it has no use for, and the few spellings llama-server lacks
that Corral takes all the same (:data:`ALSO_SPELLED`, :data:`NOT_LLAMA_SERVER_FLAGS`). Each is
parsed with its arity, so a value-taking flag consumes its value instead of leaving it to be
read as something else, and the router logs one notice per flag saying that it has no effect
here (docs/serving.md); why each has none is in :mod:`router.cli.no_effect_flags`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import NamedTuple

from corral.options.flags import NotedFlag, undefined_llama_server_flags
from corral.options.llama_server_flags import LLAMA_SERVER_FLAGS
from router.cli.no_effect_flags import GROUP_REASONS, NO_EFFECT_REASONS

__all__ = [
    "ALSO_SPELLED",
    "NOT_LLAMA_SERVER_FLAGS",
    "NoEffectFlag",
    "add_no_effect_flags",
    "no_effect_flags",
    "no_effect_given",
    "no_effect_reason",
]

_DEST = "no_effect_flags"

# Spellings llama-server's --help lacks, by the flag they are taken as: llama.cpp's own tests
# spell --backend-sampling with an underscore.
ALSO_SPELLED: dict[str, tuple[str, ...]] = {"--backend-sampling": ("--backend_sampling",)}
# Flags of llama.cpp's speculative example (not llama-server's) taken with the --spec-draft-*
# flags since they came (spellings, how many values), so that a command line naming them starts.
NOT_LLAMA_SERVER_FLAGS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("--spec-draft-cpu-range-batch", "-Crbd", "--cpu-range-batch-draft"), 1),
)
# llama-server's variable of each flag, by every spelling (a negative one's too).
_VARIABLES = {s: flag.env for flag in LLAMA_SERVER_FLAGS if flag.env for s in flag.spellings}


class NoEffectFlag(NamedTuple):
    spellings: tuple[str, ...]  # the first is the one the notice names
    arity: int  # how many values it takes


def no_effect_reason(named: str) -> str:
    """Why a no-effect flag, by the spelling its notice names, has none."""
    if named in NO_EFFECT_REASONS:
        return NO_EFFECT_REASONS[named]
    group = next((reason for start, reason in GROUP_REASONS.items() if named.startswith(start)), "")
    if not group:  # the reasons' test fails first
        raise LookupError(f"{named}: no reason in router/cli/no_effect_flags.py")
    return group


def _named_first(spellings: tuple[str, ...]) -> tuple[str, ...]:
    # The spelling the reasons are keyed by (a test checks there is at most one), else the first.
    named = next((s for s in spellings if s in NO_EFFECT_REASONS), spellings[0])
    return (named, *(s for s in spellings if s != named), *ALSO_SPELLED.get(named, ()))


def _derived(parser: argparse.ArgumentParser) -> list[NoEffectFlag]:
    flags: list[NoEffectFlag] = []
    for flag in undefined_llama_server_flags(parser):
        positives = tuple(s for s in flag.spellings if s not in flag.negatives)
        # A negative flag is noted by its own spelling: `--no-perf` is not `--perf`.
        flags += [NoEffectFlag(_named_first(group), flag.arity) for group in
                  (positives, flag.negatives) if group]  # fmt: skip
    return flags + [NoEffectFlag(s, arity) for s, arity in NOT_LLAMA_SERVER_FLAGS]


def add_no_effect_flags(parser: argparse.ArgumentParser) -> None:
    """Every llama-server flag ``parser`` does not define yet, noted; add it last."""
    flags = _derived(parser)
    # Listed in the group's text rather than one line each: they share one meaning.
    listed = ", ".join(f.spellings[0] + (" VALUE" if f.arity else "") for f in flags)
    group = parser.add_argument_group(
        "accepted for llama-server compatibility, no effect yet",
        f"{listed} (each logged once at startup as having no effect; docs/serving.md)",
    )
    for flag in flags:
        group.add_argument(
            *flag.spellings,
            dest=_DEST,
            action=NotedFlag,
            nargs=flag.arity,
            metavar="VALUE" if flag.arity else None,
            default=[],
            help=argparse.SUPPRESS,
        )


def no_effect_flags(parser: argparse.ArgumentParser) -> tuple[NoEffectFlag, ...]:
    """The no-effect flags :func:`add_no_effect_flags` gave ``parser``, in its order."""
    return tuple(
        NoEffectFlag(tuple(action.option_strings), int(action.nargs or 0))
        for action in parser._actions
        if action.dest == _DEST
    )


def no_effect_given(
    args: argparse.Namespace, parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The no-effect flags the command line gave, by first spelling, in the order given; then
    those whose llama-server variable is set (``LLAMA_ARG_THREADS_HTTP``), as ``FLAG (VAR)``."""
    env = os.environ if env is None else env
    given: list[str] = list(getattr(args, _DEST, None) or ())
    for flag in no_effect_flags(parser):
        variable = _VARIABLES.get(flag.spellings[0])
        if variable is not None and variable in env and flag.spellings[0] not in given:
            given.append(f"{flag.spellings[0]} ({variable})")
    return tuple(given)
