"""The small readers :mod:`worker.settings.derived` builds settings with: an option's text as
a folder, a template, a CPU set, RPC servers, thread counts; a bad value refused through the
parser, as llama-server refuses it at startup."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from corral.cpu_threads import default_threads
from corral.options.model_options import ModelOptions
from worker.host.cpu_placement import cpu_set
from worker.rpc.endpoints import Endpoint, parse_endpoints

__all__ = [
    "chat_template",
    "comma_list",
    "cpus",
    "effort_default",
    "folder",
    "gpu_layers",
    "layer_range",
    "preserve_default",
    "rpc",
    "scaled_files",
    "sleep_after",
    "template_kwargs",
    "thinking_default",
    "threads",
]


def sleep_after(seconds: int) -> float | None:
    # -1, as upstream, means never; the option table has already refused 0 and other negatives.
    return None if seconds == -1 else float(seconds)


def folder(options: ModelOptions, name: str, parser: argparse.ArgumentParser) -> Path | None:
    """A folder option (none given: None), checked to be a folder as llama-server checks it at
    startup: an empty value names none, and is refused as upstream refuses it."""
    path = options.path(name)
    if name in options and (path is None or not path.is_dir()):
        parser.error(f"--{name}: not a directory: {options.text(name)}")
    return path


def chat_template(options: ModelOptions, parser: argparse.ArgumentParser) -> str | None:
    path = options.text("chat-template-file")
    if path is None:
        return options.text("chat-template")
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        parser.error(f"--chat-template-file: cannot read {path}: {exc.strerror}")


def template_kwargs(raw: str | None, parser: argparse.ArgumentParser) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        kwargs = json.loads(raw)
    except ValueError as exc:
        parser.error(f"--chat-template-kwargs: not JSON: {exc}")
    if not isinstance(kwargs, dict):
        parser.error("--chat-template-kwargs: must be a JSON object")
    return kwargs


def thinking_default(reasoning: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``--reasoning on|off`` as llama-server: the default ``enable_thinking`` of every render;
    ``--chat-template-kwargs`` that set it win."""
    if reasoning == "auto":
        return kwargs
    return {"enable_thinking": reasoning == "on", **kwargs}


def effort_default(effort: str | None) -> dict[str, Any]:
    """``--reasoning-effort LEVEL`` as llama-server: the template's ``reasoning_effort``
    variable (``default``: the template's own); ``--chat-template-kwargs`` that set it win."""
    return {} if effort in (None, "default") else {"reasoning_effort": effort}


def preserve_default(preserve: str | None) -> dict[str, Any]:
    """``--[no-]reasoning-preserve`` as llama-server: the template's ``preserve_reasoning``
    (earlier turns keep their reasoning); unset, on (worker/templates/selection.py)."""
    return {} if preserve is None else {"preserve_reasoning": preserve == "true"}


def scaled_files(
    options: ModelOptions, plain_name: str, scaled_name: str
) -> tuple[tuple[str, float], ...]:
    # The option table has checked both lists; the plain files come first, at scale 1.
    plain = [(path, 1.0) for path in options.items(plain_name)]
    scaled = [
        (path, float(scale))
        for path, _, scale in (item.rpartition(":") for item in options.items(scaled_name))
    ]
    return (*plain, *scaled)


def layer_range(value: str | None) -> tuple[int, int]:
    first, _, last = (value or "-1,-1").partition(",")  # the option table checked the pair
    return int(first), int(last)


def rpc(value: str | None, parser: argparse.ArgumentParser) -> tuple[Endpoint, ...]:
    try:
        return parse_endpoints(value) if value is not None else ()
    except ValueError as exc:
        parser.error(f"--rpc: {exc}")


def cpus(options: ModelOptions, parser: argparse.ArgumentParser) -> frozenset[int] | None:
    # Checked against the CPUs this process may run on: a worker pinned by an earlier model
    # was given its own CPUs back when it released that model (worker/main.py).
    try:
        cpus = cpu_set(options.text("cpu-mask"), options.text("cpu-range"), os.sched_getaffinity(0))
    except ValueError as exc:
        parser.error(str(exc))
    return None if cpus is None else frozenset(cpus)


def comma_list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def gpu_layers(value: str) -> int:
    # llama.cpp's common numbers: the fit may lower -1 (auto) but never -2 (all) or a number.
    return {"auto": -1, "all": -2}.get(value) or int(value)


def threads(value: str | None) -> int:
    # As llama-server: unset is its math-core rule; 0 or less, every logical CPU.
    if value is None:
        return default_threads()
    return int(value) if int(value) > 0 else os.cpu_count() or 1
