"""Context shift: room for more tokens in a full context (``--context-shift``, docs/protocol.md §6).

Runs on the engine thread, for :class:`~worker.engine.batching.BatchEngine`.
"""

from __future__ import annotations

from typing import Any

from worker.engine.generation import Generation
from worker.host.llama_bindings import llama_cpp

__all__ = ["shift_context"]


def shift_context(
    memory: Any, vocab: Any, seq: int, tokens: list[int], generation: Generation
) -> bool:
    """Drop the older half of what follows the kept prompt from sequence ``seq`` and its cached
    ``tokens``, as llama-server's context shift does; False when nothing can be dropped."""
    add_bos = int(llama_cpp.llama_vocab_get_add_bos(vocab))
    n_keep = len(generation.prompt) if generation.n_keep < 0 else generation.n_keep + add_bos
    n_discard = (generation.n_past - n_keep) // 2
    if n_discard <= 0:
        return False
    llama_cpp.llama_memory_seq_rm(memory, seq, n_keep, n_keep + n_discard)
    llama_cpp.llama_memory_seq_add(memory, seq, n_keep + n_discard, generation.n_past, -n_discard)
    del tokens[n_keep : n_keep + n_discard]
    generation.n_past -= n_discard
    generation.truncated = True
    return True
