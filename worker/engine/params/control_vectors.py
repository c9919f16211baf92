"""Control vectors (``--control-vector``, ``--control-vector-scaled``,
``--control-vector-layer-range``): directions added to the hidden state of some layers.

As llama.cpp's common (``common_control_vector_load`` in common/common.cpp): each file is a GGUF
of F32 ``direction.N`` tensors, one per layer N from 1, all of the model's embedding size; the
files' directions, each times its scale, add up, and ``llama_set_adapter_cvec`` applies the sum
to the layers in the range (default: all). A file that breaks those rules fails the load, naming
the file and the rule, where llama-server fails its start.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral.hub.gguf_header import GGUFError, read_gguf_tensors
from worker.host.llama_bindings import llama_cpp

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["apply_control_vectors", "load_control_vectors"]

_F32 = 0  # ggml's type number


def _directions(path: Path) -> dict[int, npt.NDArray[np.float32]]:
    import numpy as np  # only for a model with control vectors (tests/worker/host: fence)

    try:
        _, tensors = read_gguf_tensors(path)
    except (OSError, GGUFError) as error:
        raise ValueError(f"control vector {path}: {error}") from None
    directions: dict[int, npt.NDArray[np.float32]] = {}
    for tensor in tensors:
        prefix, _, index = tensor.name.partition(".")
        if prefix != "direction" or not index.isdigit():
            raise ValueError(f"control vector {path}: unparsable layer in '{tensor.name}'")
        if int(index) == 0:
            raise ValueError(f"control vector {path}: a direction for layer 0")
        if tensor.kind != _F32 or len(tensor.dims) != 1:
            raise ValueError(f"control vector {path}: '{tensor.name}' is not a 1-D F32 tensor")
        data = np.fromfile(path, dtype=np.float32, count=tensor.dims[0], offset=tensor.offset)
        directions[int(index)] = directions.get(int(index), 0) + data
    return directions


def load_control_vectors(files: Sequence[tuple[str, float]]) -> npt.NDArray[np.float32]:
    """The files' directions times their scales, summed: row N-1 is layer N's (rows of zeros
    for layers none of them names)."""
    import numpy as np  # as above

    layers: dict[int, npt.NDArray[np.float32]] = {}
    for name, scale in files:
        for layer, direction in _directions(Path(name)).items():
            if layers and direction.size != next(iter(layers.values())).size:
                raise ValueError(f"control vector {name}: its size differs from the others'")
            layers[layer] = layers.get(layer, 0) + direction * np.float32(scale)
    if not layers:
        raise ValueError("control vectors: no direction tensors in the files given")
    n_embd = next(iter(layers.values())).size
    summed = np.zeros((max(layers), n_embd), dtype=np.float32)
    for layer, direction in layers.items():
        summed[layer - 1] = direction
    return summed


def apply_control_vectors(
    ctx: Any, model: Any, files: Sequence[tuple[str, float]], layers: tuple[int, int]
) -> None:
    """Load ``files`` and set them on ``ctx`` for ``layers`` (first, last; 0 or less: the
    model's first and last layer, as llama-server)."""
    if not files:
        return
    vectors = load_control_vectors(files)
    first = layers[0] if layers[0] > 0 else 1
    last = layers[1] if layers[1] > 0 else llama_cpp.llama_model_n_layer(model)
    data = vectors.ravel()
    pointer = data.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    if llama_cpp.llama_set_adapter_cvec(ctx, pointer, data.size, vectors.shape[1], first, last):
        raise ValueError(
            f"control vectors: llama.cpp refused them (size {vectors.shape[1]}, layers "
            f"{first}-{last}; the model's embedding size is "
            f"{llama_cpp.llama_model_n_embd(model)})"
        )
