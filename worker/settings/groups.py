"""The worker settings llama-server's flags added in issue 29: the request defaults
(``--grammar``, ``--json-schema``), the Web UI's settings, RoPE/YaRN scaling and the projector's.

Read from the normalised per-model options (:mod:`corral.options.table`); a problem is an
:class:`~corral.options.table.OptionError` that :func:`worker.settings.parse.parse_worker_args`
turns into a startup error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corral.options.model_options import ModelOptions
from corral.options.table import OptionError
from corral.options.text_files import json_object, text_or_file

__all__ = [
    "ProjectorSettings",
    "RopeSettings",
    "default_constraint",
    "kv_overrides",
    "projector_settings",
    "rope_settings",
    "ui_settings",
]


@dataclass(frozen=True, slots=True)
class ProjectorSettings:
    """How libmtmd runs the projector (worker/media/projector.py): llama-server's
    ``--mmproj-device``, ``--[no-]warmup``, ``--image-min-tokens``, ``--image-max-tokens`` and
    ``--mtmd-batch-max-tokens``; None leaves libmtmd's default (the model's own, for images)."""

    device: str | None = None  # a device name (``CPU``, ``CUDA0``); "none": the CPU
    warmup: bool = ModelOptions().flag("warmup")
    image_min_tokens: int | None = None
    image_max_tokens: int | None = None
    batch_max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class RopeSettings:
    """RoPE and YaRN context scaling (llama-server's ``--rope-*``, ``--yarn-*``); None: the
    model's own."""

    scaling: str | None = None  # none, linear or yarn
    freq_scale: float | None = None
    yarn_orig_ctx: int | None = None
    yarn_ext_factor: float | None = None
    yarn_attn_factor: float | None = None
    yarn_beta_slow: float | None = None
    yarn_beta_fast: float | None = None


def default_constraint(options: dict[str, str]) -> tuple[str | None, str | None]:
    """The default grammar and JSON Schema (at most one), the schema checked to be JSON."""
    grammar = text_or_file(options, "grammar")
    schema = text_or_file(options, "json-schema")
    if grammar is not None and schema is not None:
        raise OptionError("give a grammar or a JSON schema, not both")
    if schema is not None:
        json_object(schema, "json-schema")
    return grammar, schema


def rope_settings(options: ModelOptions) -> RopeSettings:
    real = options.optional_real
    if "rope-scale" in options and "rope-freq-scale" in options:
        raise OptionError("give --rope-scale or --rope-freq-scale, not both")
    scale = real("rope-scale")
    return RopeSettings(
        scaling=options.text("rope-scaling"),
        # As llama-server: expanding the context N times is a frequency scale of 1/N.
        freq_scale=1.0 / scale if scale is not None else real("rope-freq-scale"),
        yarn_orig_ctx=options.optional_integer("yarn-orig-ctx"),
        yarn_ext_factor=real("yarn-ext-factor"),
        yarn_attn_factor=real("yarn-attn-factor"),
        yarn_beta_slow=real("yarn-beta-slow"),
        yarn_beta_fast=real("yarn-beta-fast"),
    )


def projector_settings(options: ModelOptions) -> ProjectorSettings:
    count = options.optional_integer
    return ProjectorSettings(
        device=options.text("mmproj-device"),
        warmup=options.flag("warmup"),
        image_min_tokens=count("image-min-tokens"),
        image_max_tokens=count("image-max-tokens"),
        batch_max_tokens=count("mtmd-batch-max-tokens"),
    )


def ui_settings(options: dict[str, str]) -> dict[str, Any]:
    """``--ui-config`` (or its file): the Web UI's settings ``/props`` hands out."""
    text = text_or_file(options, "ui-config")
    return json_object(text, "ui-config") if text is not None else {}


_OVERRIDE_TYPES = ("int", "float", "bool", "str")


def kv_overrides(options: dict[str, str]) -> tuple[tuple[str, str, str], ...]:
    """``--override-kv KEY=TYPE:VALUE[,…]`` as (key, type, value), checked as llama.cpp's
    ``string_parse_kv_override`` checks them."""
    found = []
    for item in options.get("override-kv", "").split(","):
        if not item:
            continue
        key, equals, typed = item.partition("=")
        kind, colon, value = typed.partition(":")
        if not (key and equals and colon) or kind not in _OVERRIDE_TYPES:
            raise OptionError(f"--override-kv: expected KEY=int|float|bool|str:VALUE, got '{item}'")
        try:
            if kind == "int":
                int(value)
            elif kind == "float":
                float(value)
        except ValueError:
            raise OptionError(f"--override-kv {key}: not a {kind}: '{value}'") from None
        if kind == "bool" and value not in ("true", "false"):
            raise OptionError(f"--override-kv {key}: a bool is true or false, got '{value}'")
        if kind == "str" and len(value.encode()) >= 128:
            raise OptionError(f"--override-kv {key}: a str is at most 127 bytes")
        found.append((key, kind, value))
    return tuple(found)
