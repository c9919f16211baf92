"""A worker's command line, spelled like llama-server's flags, read into its settings.

The per-model flags come from the option table (:mod:`corral.options.flags`), so every option a
preset can set is accepted here. Each worker option whose row names a ``dest`` fills that field
of :class:`~worker.settings.worker_settings.WorkerSettings`, its value converted by its kind (a
dotted ``dest``, ``gpu.split_mode``, a field of a settings group); the other fields come from
the named derivations of :mod:`worker.settings.derived`. Options without
effect are logged at startup rather than silently ignored.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from corral.options.flags import (
    WORKER_OPTIONS,
    ExactFlagParser,
    add_model_flags,
    add_other_llama_server_flags,
    model_options_from,
)
from corral.options.kinds import typed_value
from corral.options.model_options import ModelOptions
from worker.devices.settings import GpuSettings
from worker.settings.derived import DERIVATIONS, Given
from worker.settings.worker_settings import WorkerSettings
from worker.speculative.settings import SpeculativeSettings

__all__ = ["parse_worker_args", "worker_flags"]

# The settings groups' defaults, which a dotted dest's value replaces (gpu, speculative).
_GROUPS: dict[str, GpuSettings | SpeculativeSettings] = {
    "gpu": GpuSettings(),
    "speculative": SpeculativeSettings(),
}


class _ListDevices(argparse.Action):
    """llama-server's ``--list-devices``: ggml's devices, then exit, whatever else is given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        # Only here does parsing load llama.cpp.
        from worker.devices.inventory import gpu_devices, list_devices_text

        print(list_devices_text(gpu_devices()), end="")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = ExactFlagParser(prog="python -m worker", description="Serve one GGUF model.")
    parser.add_argument("-m", "--model", type=Path, required=True, help="GGUF file to serve")
    parser.add_argument(
        "-a", "--alias", help="model id to report, or a comma list of names (default: file stem)"
    )
    parser.add_argument("--tags", help="informational tags of the model, comma-separated")
    parser.add_argument("-mm", "--mmproj", type=Path, help="multimodal projector GGUF")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (reported)")
    parser.add_argument("--api-key", help="key(s) every request needs, comma-separated")
    parser.add_argument("--cors-origins", default="*", help="origins browsers may call from")
    parser.add_argument(
        "--allowed-hosts", default="", help="Host names to answer besides loopback ones; *: any"
    )
    parser.add_argument(
        "--list-devices", action=_ListDevices, nargs=0, help="print the GPU devices and exit"
    )
    add_model_flags(parser)
    add_other_llama_server_flags(parser)
    return parser


def worker_flags() -> frozenset[str]:
    """Every flag spelling the worker accepts, so that a llama-server command line can be
    narrowed to the worker's (scripts/run_llama_server_tests.py)."""
    return frozenset(_parser()._option_string_actions)


def parse_worker_args(argv: list[str] | None = None) -> WorkerSettings:
    parser = _parser()
    args = parser.parse_args(argv)
    # A worker reads only its flags: the router renders every option explicitly.
    options = ModelOptions(model_options_from(args, parser, env={}))
    fields: dict[str, Any] = {}
    for spec in WORKER_OPTIONS:
        text = options.text(spec.name)
        if spec.dest is not None and text is not None:  # None: the field's default says it
            fields[spec.dest] = typed_value(spec, text)
    given = Given(options, args, parser)
    try:
        for derivation in DERIVATIONS:
            fields |= derivation.derive(given)
    except ValueError as exc:  # an OptionError or a malformed --logit-bias
        parser.error(str(exc))
    return WorkerSettings(**_grouped(fields))


def _grouped(fields: dict[str, Any]) -> dict[str, Any]:
    """A dotted name's value (``gpu.split_mode``) into its group's settings (``gpu``), whose
    other fields keep their defaults."""
    groups: dict[str, dict[str, Any]] = {}
    for name in [name for name in fields if "." in name]:
        group, _, field = name.partition(".")
        groups.setdefault(group, {})[field] = fields.pop(name)
    return fields | {group: replace(_GROUPS[group], **values) for group, values in groups.items()}
