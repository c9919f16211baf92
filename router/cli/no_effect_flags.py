"""llama-server flags Corral accepts but does not implement yet.

A single-model llama-server command line carries flags such as ``--swa-full`` or
``--cache-reuse 256``; refusing them at startup would make Corral no drop-in. Each is parsed with
its arity, so a value-taking flag consumes its value instead of leaving it to be read as something
else, and the router logs one notice per flag saying that it has no effect here (docs/serving.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

__all__ = ["NO_EFFECT_FLAGS", "add_no_effect_flags", "no_effect_given"]

# (spellings as llama-server's common/arg.cpp spells them, the first one named in the notice;
# how many values the flag takes).
NO_EFFECT_FLAGS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("--verbosity", "-lv", "--log-verbosity"), 1),
    (("--props",), 0),
    (("--cache-reuse",), 1),
    # Sampling runs on the CPU here; llama.cpp's own tests spell it with an underscore.
    (("--backend-sampling", "-bs", "--backend_sampling"), 0),
    (("--swa-full",), 0),
    # CORS is answered as docs/operations.md says: never with credentials, the headers a
    # preflight asks for, llama-server's methods.
    (("--cors-methods",), 1),
    (("--cors-headers",), 1),
    (("--cors-credentials",), 0),
    (("--no-cors-credentials",), 0),
    (("--reasoning-effort",), 1),
    (("--reasoning-preserve",), 0),
    (("--spec-draft-p-split", "--draft-p-split"), 1),
    # Speculative tuning that llama-cpp-python's API or the types Corral runs have no use for.
    (("--spec-draft-threads-batch", "-tbd", "--threads-batch-draft"), 1),
    (("--spec-draft-cpu-mask", "-Cd", "--cpu-mask-draft"), 1),
    (("--spec-draft-cpu-range", "-Crd", "--cpu-range-draft"), 1),
    (("--spec-draft-cpu-strict", "--cpu-strict-draft"), 1),
    (("--spec-draft-prio", "--prio-draft"), 1),
    (("--spec-draft-poll", "--poll-draft"), 1),
    (("--spec-draft-cpu-mask-batch", "-Cbd", "--cpu-mask-batch-draft"), 1),
    (("--spec-draft-cpu-range-batch", "-Crbd", "--cpu-range-batch-draft"), 1),
    (("--spec-draft-cpu-strict-batch", "--cpu-strict-batch-draft"), 1),
    (("--spec-draft-prio-batch", "--prio-batch-draft"), 1),
    (("--spec-draft-poll-batch", "--poll-batch-draft"), 1),
    (("--spec-draft-type-k", "-ctkd", "--cache-type-k-draft"), 1),
    (("--spec-draft-type-v", "-ctvd", "--cache-type-v-draft"), 1),
    (("--spec-draft-override-tensor", "-otd", "--override-tensor-draft"), 1),
    (("--spec-draft-cpu-moe", "-cmoed", "--cpu-moe-draft"), 0),
    (("--spec-draft-n-cpu-moe", "--spec-draft-ncmoe", "-ncmoed", "--n-cpu-moe-draft"), 1),
    (("--spec-draft-backend-sampling",), 0),
    (("--no-spec-draft-backend-sampling",), 0),
    (("--spec-ngram-simple-min-hits",), 1),
    (("--spec-ngram-map-k-size-n",), 1),
    (("--spec-ngram-map-k-size-m",), 1),
    (("--spec-ngram-map-k-min-hits",), 1),
    (("--spec-ngram-map-k4v-size-n",), 1),
    (("--spec-ngram-map-k4v-size-m",), 1),
    (("--spec-ngram-map-k4v-min-hits",), 1),
    (("--spec-ngram-mod-n-min",), 1),
    (("--spec-ngram-mod-n-max",), 1),
    (("--spec-ngram-mod-n-match",), 1),
)
_DEST = "no_effect_flags"


class _Noted(argparse.Action):
    """Records the flag's first spelling (once) and drops its value."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        noted: list[str] = list(getattr(namespace, _DEST, None) or [])
        if self.option_strings[0] not in noted:
            noted.append(self.option_strings[0])
        setattr(namespace, _DEST, noted)


def add_no_effect_flags(parser: argparse.ArgumentParser) -> None:
    # Listed in the group's text rather than one line each: they share one meaning.
    listed = ", ".join(s[0] + (" VALUE" if arity else "") for s, arity in NO_EFFECT_FLAGS)
    group = parser.add_argument_group(
        "accepted for llama-server compatibility, no effect yet",
        f"{listed} (each logged once at startup as having no effect; docs/serving.md)",
    )
    for spellings, arity in NO_EFFECT_FLAGS:
        group.add_argument(
            *spellings,
            dest=_DEST,
            action=_Noted,
            nargs=arity or 0,
            metavar="VALUE" if arity else None,
            default=[],
            help=argparse.SUPPRESS,
        )


def no_effect_given(args: argparse.Namespace) -> tuple[str, ...]:
    """The no-effect flags the command line gave, by first spelling, in the order given."""
    return tuple(getattr(args, _DEST, None) or ())
