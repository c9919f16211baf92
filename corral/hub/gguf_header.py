"""The scalar metadata and the layout of a GGUF file, read from its header without loading it.

The router uses the metadata to estimate a model's context memory before the model first runs
(see :mod:`router.workers.memory_budget`), and the layout to refuse a truncated or corrupt file
before
starting a worker, saying what is wrong (llama.cpp's own message names neither). Arrays (the
vocabulary, merges, …) are skipped, not read.
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from corral.hub.sizes import human_size

__all__ = [
    "GGUFError",
    "GGUFLayout",
    "GGUFTensor",
    "gguf_file_problem",
    "read_gguf_layout",
    "read_gguf_metadata",
    "read_gguf_tensors",
]

Scalar = int | float | bool | str

_MAGIC = b"GGUF"
# Value types by number: the struct format of each fixed-size one.
_FIXED = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q"}
_FIXED |= {11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    """Not a GGUF file, or one this reader does not understand (version 1)."""


def _read(stream: BinaryIO, fmt: str) -> int | float | bool:
    size = struct.calcsize(fmt)
    data = stream.read(size)
    if len(data) != size:
        raise GGUFError("the file ends inside its header")
    value: int | float | bool = struct.unpack(fmt, data)[0]
    return value


def _string(stream: BinaryIO) -> str:
    length = int(_read(stream, "<Q"))
    # A garbage length must not become a read (an allocation) of that many bytes.
    if length > os.fstat(stream.fileno()).st_size - stream.tell():
        raise GGUFError("the file ends inside its header")
    return stream.read(length).decode("utf-8", "replace")


def _skip_array(stream: BinaryIO) -> None:
    kind, count = int(_read(stream, "<I")), int(_read(stream, "<Q"))
    if kind in _FIXED:
        stream.seek(count * struct.calcsize(_FIXED[kind]), 1)
    elif kind == _STRING:
        for _ in range(count):
            stream.seek(int(_read(stream, "<Q")), 1)
    elif kind == _ARRAY:
        for _ in range(count):
            _skip_array(stream)
    else:
        raise GGUFError(f"unknown array element type {kind}")


def read_gguf_metadata(path: Path, *, stop_at: str | None = None) -> dict[str, Scalar]:
    """The scalar keys of the header (``general.architecture``, ``llama.block_count``, …).

    ``stop_at``: stop at the first key with this prefix. llama.cpp's converters write the
    tokenizer last, and its vocabulary (a string array of 100k+ entries) is most of a header.
    """
    with path.open("rb") as stream:
        if stream.read(4) != _MAGIC:
            raise GGUFError(f"{path.name} is not a GGUF file")
        version = int(_read(stream, "<I"))
        if version < 2:
            raise GGUFError(f"{path.name}: GGUF version {version} is not supported")
        _read(stream, "<Q")  # tensor count
        metadata: dict[str, Scalar] = {}
        for _ in range(int(_read(stream, "<Q"))):
            key = _string(stream)
            if stop_at is not None and key.startswith(stop_at):
                break
            kind = int(_read(stream, "<I"))
            if kind in _FIXED:
                metadata[key] = _read(stream, _FIXED[kind])
            elif kind == _STRING:
                metadata[key] = _string(stream)
            elif kind == _ARRAY:
                _skip_array(stream)
            else:
                raise GGUFError(f"{path.name}: unknown value type {kind} for '{key}'")
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
_MAX_DIMS = 8  # ggml has 4; more means the header is garbage, not a model
_MAX_COUNT = 1 << 32  # tensors, keys or array elements: beyond this the header is garbage


class _Truncated(GGUFError):
    """The file ends where its header says there is more."""


class _Cursor:
    """Reads a GGUF header from a buffer (the mapped file), checking every read's bounds."""

    def __init__(self, data: bytes | mmap.mmap) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int | float | bool:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise _Truncated("the file ends inside its header")
        value: int | float | bool = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def count(self) -> int:
        value = int(self.take("<Q"))
        if value > _MAX_COUNT:
            raise GGUFError(f"corrupt header: a count of {value}")
        return value

    def skip(self, size: int) -> None:
        if self.pos + size > len(self.data):
            raise _Truncated("the file ends inside its header")
        self.pos += size

    def string(self) -> str:
        length = self.count()
        start = self.pos
        self.skip(length)
        return bytes(self.data[start : self.pos]).decode("utf-8", "replace")

    def skip_value(self, kind: int) -> None:
        if kind in _FIXED:
            self.skip(struct.calcsize(_FIXED[kind]))
        elif kind == _STRING:
            self.skip(self.count())
        elif kind == _ARRAY:
            inner, count = int(self.take("<I")), self.count()
            if inner in _FIXED:  # one jump over the whole array
                self.skip(count * struct.calcsize(_FIXED[inner]))
            else:
                for _ in range(count):
                    self.skip_value(inner)
        else:
            raise GGUFError(f"corrupt header: unknown value type {kind}")


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
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size < 4:
            raise GGUFError("not a GGUF file: it is empty" if not size else "not a GGUF file")
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            cursor = _Cursor(data)
            if data[:4] != _MAGIC:
                raise GGUFError("not a GGUF file: it does not start with 'GGUF'")
            version = int(cursor.take("<4xI"))
            if version not in (2, 3):
                raise GGUFError(f"corrupt header: GGUF version {version}")
            n_tensors, keys = cursor.count(), cursor.count()
            alignment = _DEFAULT_ALIGNMENT
            for _ in range(keys):
                key, kind = cursor.string(), int(cursor.take("<I"))
                if key == "general.alignment" and kind == 4:
                    alignment = int(cursor.take("<I")) or _DEFAULT_ALIGNMENT
                else:
                    cursor.skip_value(kind)
            infos = []
            for _ in range(n_tensors):
                name = cursor.string()
                n_dims = int(cursor.take("<I"))
                if n_dims > _MAX_DIMS:
                    raise GGUFError(f"corrupt header: a tensor of {n_dims} dimensions")
                dims = tuple(int(cursor.take("<Q")) for _ in range(n_dims))
                kind, offset = int(cursor.take("<I")), int(cursor.take("<Q"))
                infos.append((name, kind, dims, offset))
            data_start = -(-cursor.pos // alignment) * alignment
    end = max(
        (offset + _tensor_bytes(kind, list(dims)) for _, kind, dims, offset in infos), default=0
    )
    parameters = sum(math.prod(dims) for _, _, dims, _ in infos)
    tensors = [
        GGUFTensor(name, kind, dims, data_start + offset) for name, kind, dims, offset in infos
    ]
    return GGUFLayout(size, data_start + end, parameters), tensors


def read_gguf_layout(path: Path) -> GGUFLayout:
    """Where the file's tensor data ends by its header: key/values and tensor infos are read
    (arrays jumped over), nothing of the weights. Raises :class:`GGUFError` saying what is wrong.
    """
    return read_gguf_tensors(path)[0]


def gguf_file_problem(path: Path) -> str | None:
    """What is wrong with a model file, in words, or ``None`` when its header and size agree."""
    try:
        layout = read_gguf_layout(path)
    except _Truncated:
        return "file is truncated: it ends inside its header"
    except GGUFError as error:
        return str(error)
    except (OSError, ValueError) as error:
        return f"cannot read the file: {error}"
    if layout.data_end > layout.size:
        return (
            f"file is truncated: {human_size(layout.size)} of the "
            f"{human_size(layout.data_end)} its header describes"
        )
    return None
