"""A model's LoRA adapters: loaded with it, scaled for everyone or for one request (docs/api.md).

``--lora FILE`` (scale 1) and ``--lora-scaled FILE:SCALE`` load adapters, numbered from 0 in
that order; ``--lora-init-without-apply`` starts every scale at 0. ``POST /lora-adapters`` sets
the scales every request uses; a request's own ``lora: [{id, scale}]`` replaces them for that
request only. In both, an adapter that is not listed gets scale 0, as in llama-server.

llama.cpp applies one set of adapter scales to a whole ``llama_decode``, so the batching loop
never mixes two sets in one batch: it takes the sets in turn, step by step
(:mod:`worker.engine.batching`), and a slot's cached prompt is only reused under the same set.
Adapters belong to the llama model and are freed with it; only the engine thread loads, applies
or describes them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import msgspec

from worker.host.errors import InvalidInput
from worker.host.llama_bindings import llama_cpp

__all__ = ["AdapterScales", "LoraAdapters", "LoraChoice"]

AdapterScales = tuple[float, ...]
"""One scale per adapter, by id: what a sequence is decoded with."""


class LoraChoice(msgspec.Struct):
    """One entry of a request's ``lora`` list or of ``POST /lora-adapters``' body.

    The defaults are llama-server's (``parse_lora_request``): no id is -1, no scale is 0.
    """

    id: int = -1
    scale: float = 0.0


def _meta(adapter: Any, key: bytes) -> str:
    buffer = ctypes.create_string_buffer(1024)
    if llama_cpp.llama_adapter_meta_val_str(adapter, key, buffer, len(buffer)) < 0:
        return ""
    return buffer.value.decode("utf-8", "replace")


class LoraAdapters:
    """The adapter files, their current global scales and, while loaded, their llama handles."""

    def __init__(self, files: Sequence[tuple[str, float]] = (), *, apply: bool = True) -> None:
        self.paths = [path for path, _ in files]
        # llama-server's --lora-init-without-apply: loaded, but at scale 0 until a POST.
        self.scales = [scale if apply else 0.0 for _, scale in files]
        self._handles: list[Any] = []
        self._meta: list[dict[str, str]] = []
        self._applied: AdapterScales | None = None

    def __len__(self) -> int:
        return len(self.paths)

    def load(self, model: Any) -> None:
        """Load every adapter for the llama model ``model``; ``ValueError`` names a bad file."""
        self._handles, self._meta, self._applied = [], [], None
        for path in self.paths:
            handle = llama_cpp.llama_adapter_lora_init(model, path.encode())
            if not handle:
                raise ValueError(f"failed to load LoRA adapter '{path}'")
            self._handles.append(handle)
            self._meta.append(
                {
                    "task_name": _meta(handle, b"adapter.lora.task_name"),
                    "prompt_prefix": _meta(handle, b"adapter.lora.prompt_prefix"),
                }
            )

    def describe(self) -> list[dict[str, Any]]:
        """``GET /lora-adapters``: llama-server's answer, one object per adapter."""
        return [
            {"id": i, "path": path, "scale": scale, **meta}
            for i, (path, scale, meta) in enumerate(
                zip(self.paths, self.scales, self._meta, strict=True)
            )
        ]

    def chosen(self, choices: list[LoraChoice] | None, field: str) -> dict[int, float] | None:
        """A request's adapter scales by id (None: it chose none); 400 for an unknown id.

        llama-server ignores an id it does not have; Corral names it, since a typo would
        otherwise silently run the request without the adapter that was asked for.
        """
        if choices is None:
            return None
        scales: dict[int, float] = {}
        for index, choice in enumerate(choices):
            if not 0 <= choice.id < len(self.paths):
                have = (
                    f"ids 0 to {len(self.paths) - 1}" if self.paths else "no LoRA adapters loaded"
                )
                raise InvalidInput(
                    f"{field}[{index}].id: no LoRA adapter with id {choice.id} ({have})"
                )
            scales[choice.id] = choice.scale
        return scales

    def set_global(self, chosen: dict[int, float]) -> None:
        """``POST /lora-adapters``: the listed scales for everyone, 0 for the others."""
        self.scales = [chosen.get(i, 0.0) for i in range(len(self.paths))]

    def scales_for(self, chosen: dict[int, float] | None) -> AdapterScales:
        """What a request is decoded with: its own choice, else the global scales now."""
        if chosen is None:
            return tuple(self.scales)
        return tuple(chosen.get(i, 0.0) for i in range(len(self.paths)))

    def apply(self, ctx: Any, scales: AdapterScales) -> None:
        """Make ``scales`` the context's adapters for the next ``llama_decode``."""
        if scales == self._applied or not self._handles:
            return
        count = len(self._handles)
        handles = (llama_cpp.llama_adapter_lora_p_ctypes * count)(*self._handles)
        values = (ctypes.c_float * count)(*scales)
        llama_cpp.llama_set_adapters_lora(ctx, handles, count, values)
        self._applied = scales
