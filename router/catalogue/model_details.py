"""What a model's GGUF says of itself, read from its header: family, parameters, quantization,
and the file's identity (size, modification time, digest). Ollama's ``/api/tags``, ``/api/ps``
and ``/api/show`` report these.

Reading a header skips its arrays (the vocabulary) but still walks them, so the answer is kept
per file version (path, size, modification time). A header that cannot be read gives what the
file's name says: what is wrong with it is the file check's to say (router/catalogue/file_check.py).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from corral.hub.gguf_header import Scalar, read_gguf_layout, read_gguf_metadata
from router.catalogue.catalogue import CatalogueEntry

__all__ = ["ModelDetails", "human_parameters", "model_details", "model_header"]

# llama.cpp's ``general.file_type`` (enum llama_ftype) by number, as Ollama names them.
_FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
    29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4",
}  # fmt: skip
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class ModelDetails:
    family: str  # general.architecture
    parameters: int
    quantization: str
    metadata: dict[str, Scalar]  # the header's scalar keys
    size: int  # bytes of every file the model loads
    modified: float  # the model file's modification time, seconds since the epoch
    digest: str


def human_parameters(count: int) -> str:
    """``134515008`` → ``134.52M``, ``8030261248`` → ``8.0B``: Ollama's ``parameter_size``."""
    for unit, scale, decimals in (("B", 1e9, 1), ("M", 1e6, 2)):
        if count >= scale:
            number = count / scale
            return f"{number:.0f}{unit}" if number.is_integer() else f"{number:.{decimals}f}{unit}"
    return f"{count / 1e3:.0f}K" if count >= 1000 else str(count)


def model_details(entry: CatalogueEntry) -> ModelDetails:
    """The model's details; a file that cannot be read reports what its name says."""
    try:
        stat = entry.path.stat()
    except OSError:  # gone since the catalogue was read (deleted, moved): a listing still answers
        return _details(entry.path, 0, 0, 0)
    size = sum(_size(path) for path in entry.files())
    return _details(entry.path, stat.st_size, stat.st_mtime_ns, size)


def model_header(path: Path) -> Mapping[str, Scalar]:
    """A GGUF's header scalars before its vocabulary, read once per version of the file (a
    listing, the KV cache estimate of every scheduling decision and the embedding test ask
    often); empty when it cannot be read (the file check says why)."""
    try:
        stat = path.stat()
    except OSError:
        return {}  # the worker's start says what is wrong with the file
    return _header(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _header(path: Path, size: int, mtime_ns: int) -> Mapping[str, Scalar]:
    try:
        return read_gguf_metadata(path, stop_at="tokenizer.")  # before the vocabulary
    except Exception:  # a bad header must not stop a start, a reload or a schedule
        return {}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@functools.lru_cache(maxsize=256)
def _details(path: Path, file_size: int, mtime_ns: int, size: int) -> ModelDetails:
    try:
        metadata = read_gguf_metadata(path)
        parameters = read_gguf_layout(path).parameters
    except Exception:  # a bad header must not fail a listing
        metadata, parameters = {}, 0
    count = metadata.get("general.parameter_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        parameters = count
    file_type = metadata.get("general.file_type")
    quantization = _FILE_TYPES.get(file_type, "unknown") if isinstance(file_type, int) else ""
    return ModelDetails(
        family=str(metadata.get("general.architecture", "")),
        parameters=parameters,
        quantization=quantization or _tag_of(path) or "unknown",
        metadata=metadata,
        size=size,
        modified=mtime_ns / 1e9,
        digest=_digest(path, file_size, mtime_ns),
    )


def _tag_of(path: Path) -> str:
    """The quant tag a file's name ends with (``model-Q4_K_M.gguf``), if any."""
    match = re.search(r"[-.]((?:I?Q\d\w*)|BF16|F16|F32)\.gguf$", path.name, re.IGNORECASE)
    return match.group(1).upper() if match else ""


def _digest(path: Path, size: int, mtime_ns: int) -> str:
    """A hub cache blob (or an Ollama blob, ``sha256-…``) is named by its sha256: that is the
    digest. Other files are not hashed (gigabytes per listing): their digest names the file's
    version (path, size, time)."""
    blob = os.path.basename(os.path.realpath(path)).removeprefix("sha256-")
    if _SHA256.fullmatch(blob):
        return blob
    return hashlib.sha256(f"{path}\0{size}\0{mtime_ns}".encode()).hexdigest()
