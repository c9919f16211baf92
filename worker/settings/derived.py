"""The worker settings that are not one option's value: each a named derivation.

:func:`worker.settings.parse.parse_worker_args` fills every field whose option row has a ``dest``
by a loop over the rows; the fields here need more than one option, a check against the
machine, or the worker's own flags (KV layout, threads, the lists of adapters and vectors, the
chat template, CPUs, RPC servers, …). Each :class:`Derivation` names the options it reads and
the fields it fills, so tests/worker/settings can check that every worker option and every
field is accounted for.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corral.children.environment import max_body_from
from corral.options.flags import other_flags_given
from corral.options.kv_layout import kv_layout
from corral.options.model_options import ModelOptions
from corral.options.rows import gpu, speculative
from corral.options.sampling_fields import sampling_option_rows
from corral.options.table import OptionSpec, option_spec
from worker.devices.settings import gpu_fields
from worker.sampling.server_defaults import sampling_defaults
from worker.settings import readers
from worker.settings.groups import (
    default_constraint,
    kv_overrides,
    projector_settings,
    rope_settings,
    ui_settings,
)
from worker.settings.worker_settings import default_kv_cache_dir
from worker.speculative.settings import speculative_fields

__all__ = ["DERIVATIONS", "Derivation", "Given"]


@dataclass(frozen=True, slots=True)
class Given:
    """What a derivation reads: the options, the worker's own flags, the parser to refuse with."""

    options: ModelOptions
    args: argparse.Namespace
    parser: argparse.ArgumentParser


@dataclass(frozen=True, slots=True)
class Derivation:
    name: str
    reads: tuple[str, ...]  # the options it reads (canonical names)
    # The WorkerSettings fields it fills, by name; a group's by a dotted one ("gpu.devices").
    derive: Callable[[Given], dict[str, Any]]


def _names(rows: tuple[OptionSpec, ...]) -> tuple[str, ...]:
    return tuple(spec.name for spec in rows)


def _group(name: str, rows: tuple[OptionSpec, ...], make: Callable[[Given], Any]) -> Derivation:
    """A settings group's fields that no row fills by its dotted ``dest`` (``gpu.split_mode``):
    ``make`` derives them from the group's other rows."""
    derived = tuple(spec.name for spec in rows if spec.dest is None)
    return Derivation(
        name, derived, lambda given: {f"{name}.{k}": v for k, v in make(given).items()}
    )


def _own_flags(given: Given) -> dict[str, Any]:
    args = given.args
    names = readers.comma_list(args.alias or "")
    return {
        "model": args.model,
        "alias": min(names) if names else args.model.stem,
        "aliases": tuple(sorted(set(names))),
        "tags": tuple(sorted(set(readers.comma_list(args.tags or "")))),
        "api_keys": readers.comma_list(args.api_key or ""),
        "cors_origins": readers.comma_list(args.cors_origins),
        "allowed_hosts": readers.comma_list(args.allowed_hosts),
        "host": args.host,
        "port": args.port,
        "mmproj": args.mmproj,
        "media_max_bytes": max_body_from(os.environ),
    }


def _layout(given: Given) -> dict[str, Any]:
    layout = kv_layout(given.options)  # the router's memory estimate reads the same layout
    return {
        "ctx_size": layout.ctx_size,
        "parallel": layout.slots,
        "kv_unified": layout.unified,
        "kv_unified_per_slot": layout.per_slot,
        "cache_type_k": layout.type_k,
        "cache_type_v": layout.type_v,
        "courtesy_slot": bool(layout.courtesy),
    }


def _threads(given: Given) -> dict[str, Any]:
    options = given.options
    batch = options.text("threads-batch")
    return {
        "threads": readers.threads(options.text("threads")),
        "threads_batch": readers.threads(batch) if batch is not None else None,
    }


def _template_kwargs(given: Given) -> dict[str, Any]:
    options = given.options
    return {
        "chat_template_kwargs": readers.thinking_default(
            options.word("reasoning"),
            readers.effort_default(options.text("reasoning-effort"))
            | readers.preserve_default(options.text("reasoning-preserve"))
            | readers.template_kwargs(options.text("chat-template-kwargs"), given.parser),
        )
    }


def _embeddings(given: Given) -> dict[str, Any]:
    # Upstream's --reranking sets embedding=true and pooling=rank; the flag beats --pooling here,
    # since a worker's flags come rendered in table order, not in the order a user wrote them.
    options = given.options
    reranking = options.flag("reranking")
    return {
        "embeddings": reranking or options.flag("embeddings"),
        "pooling": "rank" if reranking else options.text("pooling"),
    }


def _constraint(given: Given) -> dict[str, Any]:
    grammar, json_schema = default_constraint(given.options.given)
    return {"grammar": grammar, "json_schema": json_schema}


def _folders(given: Given) -> dict[str, Any]:
    options, parser = given.options, given.parser
    return {
        "slot_save_path": readers.folder(options, "slot-save-path", parser),
        "media_path": readers.folder(options, "media-path", parser),
    }


def _control_vectors(given: Given) -> dict[str, Any]:
    options = given.options
    return {
        "control_vectors": readers.scaled_files(options, "control-vector", "control-vector-scaled"),
        "control_vector_layers": readers.layer_range(options.text("control-vector-layer-range")),
    }


def _derivation(name: str, reads: tuple[str, ...], make: Callable[[Given], Any]) -> Derivation:
    """A derivation that fills the one field its name spells (``gpu``, ``kv_overrides``)."""
    return Derivation(name, reads, lambda given: {name: make(given)})


def _ignored(given: Given) -> dict[str, str]:
    # Given, but without effect: logged at startup with the row's reason.
    return {name: value for name, value in given.options if option_spec(name).no_effect}


_LAYOUT = (
    "ctx-size",
    "parallel",
    "kv-unified",
    "kv-unified-per-slot",
    "cache-type-k",
    "cache-type-v",
    "courtesy-slot",
)
_TEMPLATE = ("reasoning", "reasoning-effort", "reasoning-preserve", "chat-template-kwargs")
_ROPE = (
    "rope-scaling",
    "rope-scale",
    "rope-freq-scale",
    "yarn-orig-ctx",
    "yarn-ext-factor",
    "yarn-attn-factor",
    "yarn-beta-slow",
    "yarn-beta-fast",
)
_PROJECTOR = (
    "mmproj-device",
    "warmup",
    "image-min-tokens",
    "image-max-tokens",
    "mtmd-batch-max-tokens",
)
_CONSTRAINT = ("grammar", "grammar-file", "json-schema", "json-schema-file")

DERIVATIONS: tuple[Derivation, ...] = (
    Derivation("the worker's own flags", (), _own_flags),
    Derivation("kv layout", _LAYOUT, _layout),
    Derivation("threads", ("threads", "threads-batch"), _threads),
    _derivation(
        "n_gpu_layers",
        ("n-gpu-layers",),
        lambda g: readers.gpu_layers(g.options.word("n-gpu-layers")),
    ),
    _derivation("rpc", ("rpc",), lambda g: readers.rpc(g.options.text("rpc"), g.parser)),
    _derivation("sampling", _names(sampling_option_rows()), lambda g: sampling_defaults(g.options)),
    _derivation(
        "chat_template",
        ("chat-template", "chat-template-file"),
        lambda g: readers.chat_template(g.options, g.parser),
    ),
    Derivation("template variables", _TEMPLATE, _template_kwargs),
    _derivation("cpus", ("cpu-mask", "cpu-range"), lambda g: readers.cpus(g.options, g.parser)),
    _derivation("priority", ("prio",), lambda g: int(g.options.word("prio"))),
    _derivation(
        "sleep_idle_seconds",
        ("sleep-idle-seconds",),
        lambda g: readers.sleep_after(g.options.integer("sleep-idle-seconds")),
    ),
    Derivation("embeddings", ("embeddings", "pooling", "reranking"), _embeddings),
    _derivation("rope", _ROPE, lambda g: rope_settings(g.options)),
    _derivation("kv_overrides", ("override-kv",), lambda g: kv_overrides(g.options.given)),
    _derivation("projector", _PROJECTOR, lambda g: projector_settings(g.options)),
    Derivation("folders", ("slot-save-path", "media-path"), _folders),
    _derivation(
        "kv_cache_dir",
        ("kv-cache-dir",),
        lambda g: g.options.path("kv-cache-dir") or default_kv_cache_dir(os.environ),
    ),
    _derivation(
        "lora",
        ("lora", "lora-scaled"),
        lambda g: readers.scaled_files(g.options, "lora", "lora-scaled"),
    ),
    Derivation(
        "control vectors",
        ("control-vector", "control-vector-scaled", "control-vector-layer-range"),
        _control_vectors,
    ),
    _group("speculative", speculative.ROWS, lambda g: speculative_fields(g.options)),
    _group("gpu", gpu.ROWS, lambda g: gpu_fields(g.options)),
    Derivation("request constraint", _CONSTRAINT, _constraint),
    _derivation(
        "ui_settings", ("ui-config", "ui-config-file"), lambda g: ui_settings(g.options.given)
    ),
    _derivation("options_given", (), lambda g: frozenset(g.options.given)),
    _derivation("ignored", (), _ignored),
    _derivation("no_effect_flags", (), lambda g: other_flags_given(g.args)),
)
