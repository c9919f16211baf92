"""The scalar metadata of a GGUF file, read from its header without loading the model.

The router uses it to estimate a model's context memory before the model first runs (see
:mod:`router.memory_budget`). Arrays (the vocabulary, merges, …) are skipped, not read.
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

__all__ = ["GGUFError", "read_gguf_metadata"]

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
