"""``POST /slots/{id}?action=save|restore|erase``, as llama-server does them (docs/api.md).

Files are llama.cpp sequence state files (``llama_state_seq_save_file``) whose token list is
llama-server's packed form (``LLAMA_TOKEN_NULL``, version 1, the tokens, no media), so a file
saved by either server restores in the other; a plain token list, as older servers wrote, is
read too. Only the engine thread runs the actions.
"""

from __future__ import annotations

import ctypes
import time
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.engine.batching import slot_index
from worker.host.errors import EngineFailure, InvalidInput
from worker.host.llama_bindings import llama_cpp

if TYPE_CHECKING:
    from worker.engine.model import LoadedModel

__all__ = ["erase_slot", "restore_slot", "save_slot", "valid_filename"]

_PACKED_VERSION = 1
_MAX_FILENAME_BYTES = 255
# Upstream's fs_validate_filename: illegal characters and look-alikes of / \ and the period.
_FORBIDDEN = frozenset(':*?"<>|') | {"\uff0e", "\u2215", "\u2216", "\ufffd", "\ufeff"}


def valid_filename(name: str) -> bool:
    """Upstream's ``fs_validate_filename`` without subdirectories (``common/common.cpp``)."""
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return False
    if not name or len(encoded) > _MAX_FILENAME_BYTES:
        return False
    for char in name:
        code = ord(char)
        if code <= 0x1F or code == 0x7F or 0x80 <= code <= 0x9F or char in _FORBIDDEN:
            return False
        if char in "/\\" or unicodedata.category(char) == "Cs":
            return False
    if name[0] == " " or name[-1] in " .":
        return False
    return ".." not in name and name != "."


def _slot(model: LoadedModel, id_slot: int) -> Any:
    slots = model.batcher.slots
    return slots[slot_index(id_slot, len(slots))]


def save_slot(model: LoadedModel, id_slot: int, folder: Path, filename: str) -> dict[str, Any]:
    started = time.perf_counter()
    slot = _slot(model, id_slot)
    tokens = list(slot.tokens)
    packed = [llama_cpp.LLAMA_TOKEN_NULL, _PACKED_VERSION, len(tokens), *tokens, 0]
    array = (llama_cpp.llama_token * len(packed))(*packed)
    path = str(folder / filename).encode()
    written = llama_cpp.llama_state_seq_save_file(model.ctx, path, slot.id, array, len(packed))
    if written == 0:
        raise EngineFailure("Unable to save slot")
    return {
        "id_slot": id_slot,
        "filename": filename,
        "n_saved": len(tokens),
        "n_written": written,
        "timings": {"save_ms": (time.perf_counter() - started) * 1000},
    }


def _unpack(packed: list[int]) -> list[int]:
    """The tokens of a saved token list: llama-server's packed form or a plain list."""
    if not packed or packed[0] != llama_cpp.LLAMA_TOKEN_NULL:
        return packed
    if len(packed) < 3 or packed[1] != _PACKED_VERSION:
        raise ValueError("Unsupported server tokens state version")
    n_tokens = packed[2]
    if n_tokens < 0 or 3 + n_tokens + 1 > len(packed):
        raise ValueError("Truncated server tokens state")
    n_media = packed[3 + n_tokens]
    if n_media != 0:
        raise ValueError("Cannot restore media tokens without an mmproj")
    if len(packed) != 3 + n_tokens + 1:
        raise ValueError("Trailing data in server tokens state")
    return packed[3 : 3 + n_tokens]


def _load(model: LoadedModel, seq: int, path: bytes) -> tuple[int, list[int]]:
    count = ctypes.c_size_t(0)
    read = llama_cpp.llama_state_seq_load_file(model.ctx, path, seq, None, 0, ctypes.byref(count))
    if read == 0:
        return 0, []
    capacity = max(count.value, 1)
    tokens = (llama_cpp.llama_token * capacity)()
    read = llama_cpp.llama_state_seq_load_file(
        model.ctx, path, seq, tokens, capacity, ctypes.byref(count)
    )
    return read, list(tokens[: count.value])


def restore_slot(
    model: LoadedModel, id_slot: int, folder: Path, filename: str, scope: str
) -> dict[str, Any]:
    """Load the file into the slot; only requests of the cache ``scope`` reuse it."""
    started = time.perf_counter()
    slot = _slot(model, id_slot)
    model.batcher.save_cache(slot)  # unsaved, it would be lost: the disk tier gets it first
    memory = llama_cpp.llama_get_memory(model.ctx)
    read, packed = _load(model, slot.id, str(folder / filename).encode())
    try:
        if read == 0:
            raise ValueError("No available space in KV cache or invalid slot save file")
        tokens = _unpack(packed)
        if len(tokens) > model.batcher.n_ctx_seq:
            raise ValueError("Restored prompt does not fit in the slot context")
        if any(not 0 <= token < model.n_vocab for token in tokens):
            raise ValueError("Invalid tokens in slot save file")
    except ValueError as exc:
        llama_cpp.llama_memory_seq_rm(memory, slot.id, -1, -1)
        slot.tokens = []
        raise InvalidInput(f"Unable to restore slot: {exc}") from None
    slot.tokens, slot.scope = tokens, scope
    return {
        "id_slot": id_slot,
        "filename": filename,
        "n_restored": len(tokens),
        "n_read": read,
        "timings": {"restore_ms": (time.perf_counter() - started) * 1000},
    }


def erase_slot(model: LoadedModel, id_slot: int) -> dict[str, Any]:
    slot = _slot(model, id_slot)
    model.batcher.save_cache(slot)  # as at a request's end: the disk tier keeps what it had
    erased = len(slot.tokens)
    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(model.ctx), slot.id, -1, -1)
    slot.tokens = []
    return {"id_slot": id_slot, "n_erased": erased}
