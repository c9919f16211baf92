"""llama-server flags Corral accepts but does not implement yet.

A single-model llama-server command line carries flags such as ``--metrics`` or ``--keep 256``;
refusing them at startup would make Corral no drop-in. Each is parsed with its arity, so a
value-taking flag consumes its value instead of leaving it to be read as something else, and the
router logs one notice per flag saying that it has no effect here (docs/serving.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

__all__ = ["NO_EFFECT_FLAGS", "add_no_effect_flags", "no_effect_given"]

# (spellings as llama-server's common/arg.cpp spells them, the first one named in the notice;
# how many values the flag takes).
NO_EFFECT_FLAGS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("--verbose", "-v", "--log-verbose"), 0),
    (("--verbosity", "-lv", "--log-verbosity"), 1),
    (("--props",), 0),
    (("--kv-unified", "-kvu"), 0),
    (("--no-kv-unified", "-no-kvu"), 0),
    (("--cache-reuse",), 1),
    # Sampling runs on the CPU here; llama.cpp's own tests spell it with an underscore.
    (("--backend-sampling", "-bs", "--backend_sampling"), 0),
    (("--swa-full",), 0),
    (("--chat-template-file",), 1),
    (("--reasoning", "-rea"), 1),
    (("--reasoning-format",), 1),
    (("--reasoning-effort",), 1),
    (("--reasoning-budget",), 1),
    (("--reasoning-budget-message",), 1),
    (("--reasoning-preserve",), 0),
    (("--tools",), 1),
    (("--slot-save-path",), 1),
    (("--lora",), 1),
    (("--lora-scaled",), 1),
    (("--lora-init-without-apply",), 0),
    (("--model-draft", "-md", "--spec-draft-model"), 1),
    (("--hf-repo-draft", "-hfd", "-hfrd", "--spec-draft-hf"), 1),
    (("--ctx-size-draft", "-cd"), 1),
    (("--gpu-layers-draft", "-ngld", "--n-gpu-layers-draft", "--spec-draft-ngl"), 1),
    (("--spec-type",), 1),
    (("--spec-draft-n-max", "--draft", "--draft-n", "--draft-max"), 1),
    (("--spec-draft-n-min", "--draft-min", "--draft-n-min"), 1),
    (("--spec-draft-p-min", "--draft-p-min"), 1),
    (("--spec-draft-p-split", "--draft-p-split"), 1),
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
