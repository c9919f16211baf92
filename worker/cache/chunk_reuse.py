"""``--cache-reuse``: a prompt takes chunks of its slot's cache from further on, shifted into place.

After the longest common prefix, llama-server (tools/server/server-context.cpp) walks the slot's
cached tokens and the prompt together: wherever at least ``n_cache_reuse`` tokens match, their
cells are moved to the prompt's positions (``llama_memory_seq_rm`` of the gap, then
``llama_memory_seq_add``) instead of being computed again; a cached token that starts no such run
is skipped. So a prompt that drops part of the cached one (an editor's context window that moved
on, as llama.vim's, or a chat history with a message cut out) gets what follows back; text
inserted into the prompt is new and is read. Only for caches that can shift (not a sliding-window or
recurrent one, not a media prompt). Only the engine thread calls into this module.
"""

from __future__ import annotations

from typing import Any, Protocol

from worker.host.llama_bindings import llama_cpp

__all__ = ["shift_chunks"]


class _Slot(Protocol):
    id: int
    tokens: list[int]


def shift_chunks(memory: Any, slot: _Slot, prompt: list[int], n_past: int, min_chunk: int) -> int:
    """Move the runs of at least ``min_chunk`` cached tokens that the prompt has after its first
    ``n_past`` (the common prefix) into the prompt's positions; how many prompt tokens the slot
    then holds. ``slot.tokens`` becomes what the cache holds in order."""
    cached = slot.tokens
    head_c = head_p = n_past
    while head_c < len(cached) and head_p < len(prompt):
        n_match = 0
        while (
            head_c + n_match < len(cached)
            and head_p + n_match < len(prompt)
            and cached[head_c + n_match] == prompt[head_p + n_match]
        ):
            n_match += 1
        if n_match >= min_chunk:
            llama_cpp.llama_memory_seq_rm(memory, slot.id, head_p, head_c)
            llama_cpp.llama_memory_seq_add(
                memory, slot.id, head_c, head_c + n_match, head_p - head_c
            )
            n_past += n_match
            head_c += n_match
            head_p += n_match
        else:
            head_c += 1
    slot.tokens = prompt[:n_past]
    return n_past
