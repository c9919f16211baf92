"""Where a model's layers and bytes went, as llama.cpp reports them while it loads.

llama.cpp's C API says neither where a loaded model's weights went nor how big each device's
buffers are (its memory breakdown is C++ only, src/llama-ext.h); its loader logs both: one line
per layer (src/llama-model.cpp ``load_tensors``: "layer %3d assigned to device %s", debug level)
and one per buffer ("CUDA0 model buffer size = 123.45 MiB", llama-kv-cache.cpp's "KV buffer",
llama-memory-recurrent.cpp's "RS buffer", llama-context.cpp's "compute buffer"). While a model
and its context load, a log callback reads those lines and hands every line on to the logger
that was there before, which is put back afterwards. The layer count follows llama.cpp's: the
repeating layers and the output layer (``n_layer + 1``); the input layer (token embeddings)
always stays on the CPU, so the CPU is always listed. A buffer counts for the device whose own
buffer type it is, any other (mapped, repacked, pinned host memory) for the CPU, as llama.cpp's
own breakdown counts host buffers (common/fit.cpp). /models shows the result as
``meta.devices`` (docs/api.md); the sizes are the log's, to 0.01 MiB.

A load that fails for memory says so in the same log: ggml-alloc.c's "failed to allocate CUDA0
buffer of size N", for weights, KV cache and compute buffers alike, on every back-end.
:meth:`LayerPlacement.out_of_memory` turns that into an :class:`OutOfMemory`: the device, what
this load had placed there with the failed allocation, and what the device has free.
"""

from __future__ import annotations

import ctypes
import re
from collections import Counter, defaultdict
from types import TracebackType
from typing import Any

import msgspec

from corral.children.device_use import DeviceUse, OutOfMemory
from worker.host import ggml_backends
from worker.host.llama_bindings import llama_cpp

__all__ = ["LayerPlacement"]

_ASSIGNED = re.compile(rb"layer\s+(\d+) assigned to device ([^,\s]+)")
_BUFFER = re.compile(rb"(\S+)\s+(model|KV|RS|compute) buffer size =\s*([\d.]+) MiB")
_PART = {b"model": "model_bytes", b"KV": "context_bytes", b"RS": "context_bytes"}
_FAILED = re.compile(rb"failed to allocate (\S+) buffer of size (\d+)")
_CPU = "CPU"
_MIB = 1 << 20


def _buffer_devices() -> dict[str, str]:
    """Each non-CPU device's own buffer type name → the device's name (``CUDA0`` → ``CUDA0``)."""
    found = {}
    for device, kind in ggml_backends.devices():
        buft = (
            ggml_backends.device_buffer_type(device)
            if kind != ggml_backends.DEVICE_TYPE_CPU
            else None
        )
        if buft:
            found[ggml_backends.buffer_type_name(buft)] = ggml_backends.device_name(device)
    return found


class LayerPlacement:
    """``with LayerPlacement() as placement:`` around a model's and its context's load; then
    :meth:`devices`."""

    def __init__(self) -> None:
        self._layers: dict[int, str] = {}
        self._bytes: dict[str, Counter[str]] = defaultdict(Counter)  # buffer name → part → bytes
        self._failed: tuple[str, int] | None = None  # the first allocation that failed
        self._callback = llama_cpp.llama_log_callback(self._on_log)

    def __enter__(self) -> LayerPlacement:
        self._previous = llama_cpp.llama_log_callback()
        self._previous_data = ctypes.c_void_p()
        llama_cpp.llama_log_get(ctypes.byref(self._previous), ctypes.byref(self._previous_data))
        self._previous_ggml = ggml_backends.ggml_logger()
        llama_cpp.llama_log_set(self._callback, None)  # llama's and ggml's
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        llama_cpp.llama_log_set(self._previous, self._previous_data)
        ggml_backends.set_ggml_logger(*self._previous_ggml)

    def _on_log(self, level: int, text: bytes | None, _: Any) -> None:
        if text is not None:
            if (match := _ASSIGNED.search(text)) is not None:
                self._layers[int(match[1])] = match[2].decode()
            elif (match := _BUFFER.search(text)) is not None:
                part = _PART.get(match[2], "compute_bytes")
                self._bytes[match[1].decode()][part] += round(float(match[3]) * _MIB)
            elif (match := _FAILED.search(text)) is not None and self._failed is None:
                self._failed = (match[1].decode(), int(match[2]))
            if self._previous:
                self._previous(level, text, self._previous_data)

    def out_of_memory(self) -> OutOfMemory | None:
        """Why the load failed, when an allocation failed: call it once the load's buffers are
        freed, so that ``free`` is what the device has without them."""
        if self._failed is None:
            return None
        buffer, size = self._failed
        owners = _buffer_devices()
        device = owners.get(buffer, _CPU)
        placed = sum(
            sum(parts.values())
            for name, parts in self._bytes.items()
            if owners.get(name, _CPU) == device
        )
        free = next(
            (
                ggml_backends.device_memory(handle)[0]
                for handle, kind in ggml_backends.devices()
                if (kind == ggml_backends.DEVICE_TYPE_CPU) == (device == _CPU)
                and (device == _CPU or ggml_backends.device_name(handle) == device)
            ),
            0,
        )
        return OutOfMemory(device=device, needed=placed + size, free=free)

    def devices(self, labels: dict[str, str]) -> list[dict[str, Any]]:
        """A :class:`DeviceUse` per device, as JSON, the CPU first, then in layer order;
        ``labels`` renames devices (an RPC device's name gets its server's address)."""
        counts = Counter(self._layers[layer] for layer in sorted(self._layers))
        placed = {_CPU: counts.pop(_CPU, 0), **counts}
        owners = _buffer_devices()
        sizes: dict[str, Counter[str]] = defaultdict(Counter)
        for buffer, parts in self._bytes.items():
            sizes[owners.get(buffer, _CPU)].update(parts)
        for name in sizes:
            placed.setdefault(name, 0)
        uses = [
            DeviceUse(
                name=labels.get(name, name),
                layers=layers,
                model_bytes=sizes[name]["model_bytes"],
                context_bytes=sizes[name]["context_bytes"],
                compute_bytes=sizes[name]["compute_bytes"],
            )
            for name, layers in placed.items()
        ]
        result: list[dict[str, Any]] = msgspec.to_builtins(uses)
        return result
