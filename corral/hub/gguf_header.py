"""The scalar metadata and the layout of a GGUF file, read from its header without loading it.

The router uses the metadata to estimate a model's context memory before the model first runs
(see :mod:`router.capacity.memory_budget`), and the layout to refuse a truncated or corrupt file
before starting a worker, saying what is wrong (llama.cpp's own message names neither). Arrays
(the vocabulary, merges, …) are skipped, not read. Every read is bounded whatever the header
claims (:mod:`corral.hub.gguf_cursor`): these raise :class:`GGUFError` and nothing else.
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from corral.hub.gguf_cursor import GGUFCursor, GGUFError, Scalar, Truncated
from corral.hub.sizes import human_size

__all__ = [
    "GGUFError",
    "GGUFLayout",
    "GGUFTensor",
    "Scalar",
    "gguf_file_problem",
    "read_gguf_layout",
    "read_gguf_metadata",
    "read_gguf_tensors",
]

_MAGIC = b"GGUF"
_MAX_KEYS = 1 << 16  # key/value pairs; real models have a few dozen
_MAX_TENSORS = 1 << 18  # real models have thousands at most
_MAX_TENSOR_NAME = 63  # llama.cpp's GGML_MAX_NAME, less its terminating NUL
_MAX_DIMS = 8  # ggml has 4; more means the header is garbage, not a model
_MAX_ELEMENTS = (1 << 63) - 1  # a tensor's elements, as llama.cpp checks them (INT64_MAX)


@contextmanager
def _header(path: Path) -> Iterator[GGUFCursor]:
    """A cursor after the file's magic and version. Non-blocking: a FIFO named ``*.gguf`` must
    not hang its reader."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise GGUFError(f"cannot open the file: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GGUFError("not a GGUF file: not a regular file")
        if info.st_size < 4:
            raise GGUFError(
                "not a GGUF file: it is empty" if not info.st_size else "not a GGUF file"
            )
        cursor = GGUFCursor(fd, info.st_size)
        if cursor.raw(4) != _MAGIC:
            raise GGUFError("not a GGUF file: it does not start with 'GGUF'")
        version = cursor.u32()
        if version not in (2, 3):  # 1 had 32-bit counts; 2 and 3 differ only in byte order
            raise GGUFError(f"corrupt header: GGUF version {version}")
        yield cursor
    except OSError as error:  # a read error half-way (an I/O error, a file on a lost mount)
        raise GGUFError(f"cannot read the file: {error.strerror}") from None
    finally:
        os.close(fd)


def read_gguf_metadata(path: Path, *, stop_at: str | None = None) -> dict[str, Scalar]:
    """The scalar keys of the header (``general.architecture``, ``llama.block_count``, …);
    string values longer than the cursor's caps are left out.

    ``stop_at``: stop at the first key with this prefix. llama.cpp's converters write the
    tokenizer last, and its vocabulary (a string array of 100k+ entries) is most of a header.
    """
    with _header(path) as cursor:
        cursor.count(_MAX_TENSORS, "tensors")
        metadata: dict[str, Scalar] = {}
        for _ in range(cursor.count(_MAX_KEYS, "keys")):
            key = cursor.name()
            if stop_at is not None and key.startswith(stop_at):
                break
            value = cursor.value(cursor.u32())
            if value is not None:
                metadata[key] = value
        return metadata


# ggml tensor types by number: (elements per block, bytes per block); tests compare it with the
# gguf package's table. A tensor of a type not listed counts for its offset only, so a new type
# can make the check lenient, never wrong.
_GGML_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 40), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
    15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
    21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4),
    27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66),
    39: (32, 17), 40: (64, 36), 41: (128, 18),
}  # fmt: skip
_DEFAULT_ALIGNMENT = 32


@dataclass(frozen=True, slots=True)
class GGUFLayout:
    size: int  # bytes the file has
    data_end: int  # bytes its header says it has: the end of the last tensor's data
    parameters: int = 0  # the weights' elements, every tensor's (Ollama's parameter_size)


def _tensor_bytes(kind: int, dims: list[int]) -> int:
    block = _GGML_BLOCKS.get(kind)
    if block is None:
        return 0
    elements = math.prod(dims)
    return elements // block[0] * block[1]


@dataclass(frozen=True, slots=True)
class GGUFTensor:
    name: str
    kind: int  # ggml type (0: F32)
    dims: tuple[int, ...]
    offset: int  # where its data starts in the file


def read_gguf_tensors(path: Path) -> tuple[GGUFLayout, list[GGUFTensor]]:
    """The file's layout and its tensors' names, types, shapes and data offsets (nothing of the
    data itself). Raises :class:`GGUFError` saying what is wrong."""
    with _header(path) as cursor:
        n_tensors, keys = cursor.count(_MAX_TENSORS, "tensors"), cursor.count(_MAX_KEYS, "keys")
        alignment = _DEFAULT_ALIGNMENT
        for _ in range(keys):
            key, kind = cursor.name(), cursor.u32()
            if key == "general.alignment" and kind == 4:
                alignment = cursor.u32() or _DEFAULT_ALIGNMENT
                if alignment & (alignment - 1):  # as llama.cpp refuses it
                    raise GGUFError(f"corrupt header: alignment {alignment} is not a power of 2")
            else:
                cursor.skip_value(kind)
        infos = [_tensor_info(cursor) for _ in range(n_tensors)]
        data_start = -(-cursor.pos // alignment) * alignment
        size = cursor.size
    end = max(
        (offset + _tensor_bytes(kind, list(dims)) for _, kind, dims, offset in infos), default=0
    )
    parameters = sum(math.prod(dims) for _, _, dims, _ in infos)
    tensors = [
        GGUFTensor(name, kind, dims, data_start + offset) for name, kind, dims, offset in infos
    ]
    return GGUFLayout(size, data_start + end, parameters), tensors


def _tensor_info(cursor: GGUFCursor) -> tuple[str, int, tuple[int, ...], int]:
    name = cursor.name("tensor", _MAX_TENSOR_NAME)
    n_dims = cursor.u32()
    if n_dims > _MAX_DIMS:
        raise GGUFError(f"corrupt header: a tensor of {n_dims} dimensions")
    dims = tuple(int(cursor.fixed(10)) for _ in range(n_dims))
    if math.prod(dims) > _MAX_ELEMENTS or any(dim > _MAX_ELEMENTS for dim in dims):
        raise GGUFError(f"corrupt header: tensor '{name}' has a shape of {list(dims)}")
    return name, cursor.u32(), dims, int(cursor.fixed(10))


def read_gguf_layout(path: Path) -> GGUFLayout:
    """Where the file's tensor data ends by its header: key/values and tensor infos are read
    (arrays jumped over), nothing of the weights. Raises :class:`GGUFError` saying what is wrong.
    """
    return read_gguf_tensors(path)[0]


def gguf_file_problem(path: Path) -> str | None:
    """What is wrong with a model file, in words, or ``None`` when its header and size agree."""
    try:
        layout = read_gguf_layout(path)
    except Truncated:
        return "file is truncated: it ends inside its header"
    except GGUFError as error:
        return str(error)
    except Exception as error:  # a reader's bug must not fail a listing: say what it was
        return f"cannot read the header: {error!r}"
    if layout.data_end > layout.size:
        return (
            f"file is truncated: {human_size(layout.size)} of the "
            f"{human_size(layout.data_end)} its header describes"
        )
    return None
