"""Which device holds each of a model's layers, as llama.cpp decides while it loads.

llama.cpp's C API does not say where a loaded model's weights went; its loader logs it, one
line per layer (src/llama-model.cpp ``load_tensors``: "layer %3d assigned to device %s"), at
debug level. While a model loads, a log callback counts those lines and hands every line on to
the logger that was there before, which is put back afterwards. The count follows llama.cpp's:
the repeating layers and the output layer (``n_layer + 1``); the input layer (token embeddings)
always stays on the CPU, so the CPU is always listed. /models shows the result as
``meta.devices`` (docs/api.md).
"""

from __future__ import annotations

import ctypes
import re
from collections import Counter
from types import TracebackType
from typing import Any

from worker.host import ggml_backends
from worker.host.llama_bindings import llama_cpp

__all__ = ["LayerPlacement"]

_ASSIGNED = re.compile(rb"layer\s+(\d+) assigned to device ([^,\s]+)")
_CPU = "CPU"


class LayerPlacement:
    """``with LayerPlacement() as placement:`` around a model load; then :meth:`devices`."""

    def __init__(self) -> None:
        self._layers: dict[int, str] = {}
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
            if self._previous:
                self._previous(level, text, self._previous_data)

    def devices(self, labels: dict[str, str]) -> list[dict[str, Any]]:
        """``{"name", "layers"}`` per device, the CPU first, then in layer order; ``labels``
        renames devices (an RPC device's name gets its server's address)."""
        counts = Counter(self._layers[layer] for layer in sorted(self._layers))
        placed = {_CPU: counts.pop(_CPU, 0), **counts}
        return [{"name": labels.get(name, name), "layers": n} for name, n in placed.items()]
