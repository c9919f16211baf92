"""What each slot's KV cache holds, and where a prompt's start comes from: the slot's own cache,
a copy set aside in host memory (:mod:`worker.cache.prompt_cache`) or a file written to disk
(:mod:`worker.cache.kv_store`), by this worker or an earlier one. At the end of each request the
slot's state is read out of the context here, between two decode steps, and handed to the disk
tier's writer (:mod:`worker.cache.kv_writer`). Only the engine thread calls into this module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from worker.cache.checkpoints import Checkpoints
from worker.cache.chunk_reuse import shift_chunks
from worker.cache.kv_file import SavedCache
from worker.cache.kv_store import MIN_TOKENS, KvStats
from worker.cache.kv_writer import KvWriter
from worker.cache.prompt_cache import PromptCache, SetAside, seq_state
from worker.engine.generation import Generation
from worker.engine.lora_adapters import AdapterScales
from worker.engine.token_prefix import common_prefix
from worker.host.llama_bindings import llama_cpp

__all__ = ["Restore", "Slot", "SlotCaches", "reusable"]


class Restore(Protocol):
    """(seq, prompt, tokens the slot already reuses, adapter scales) → the tokens the sequence
    holds after loading a saved cache made under those scales into it, or None when nothing was
    loaded; ``began`` is called just before a load starts."""

    def __call__(
        self,
        seq: int,
        prompt: list[int],
        have: int,
        scales: AdapterScales,
        *,
        began: Callable[[], None] | None = None,
    ) -> list[int] | None: ...


@dataclass
class Slot:
    id: int
    tokens: list[int] = field(default_factory=list)  # what its KV cache holds
    adapter_scales: AdapterScales = ()  # the LoRA scales that cache was computed with
    generation: Generation | None = None
    last: Generation | None = None  # the latest generation it ran, for ``/slots``
    id_task: int = -1  # which admitted generation that was, counted from 0


def reusable(slot: Slot, generation: Generation) -> int:
    """How many cached tokens of ``slot`` can serve ``generation``'s prompt.

    None of them when the cache was computed under other LoRA adapter scales.
    """
    if slot.adapter_scales != generation.adapter_scales:
        return 0
    return common_prefix(slot.tokens, generation.prompt)


class SlotCaches:
    """The slots' caches in the context ``ctx``.

    ``prompt_cache`` keeps a copy of a slot's cache that a prompt is about to overwrite and,
    with ``idle_aside`` (a KV cache shared by the slots), of every idle slot's cache, cleared
    once a generation has started. Copies are restored before ``restore``'s saved files are
    tried. A copy or a saved cache carries the adapter scales it was computed under, and only
    serves a generation decoded with the same. ``writer``: the disk tier, which gets each
    slot's state at the end of each request; ``stats`` counts what came back from where.
    ``checkpoints``, for a model whose state cannot all be cut back (a sliding window, a
    recurrent state), says how much of a cut cache can be resumed and when to take checkpoints.
    """

    def __init__(
        self,
        ctx: Any,
        restore: Restore | None = None,
        prompt_cache: PromptCache | None = None,
        idle_aside: bool = False,
        checkpoints: Checkpoints | None = None,
        writer: KvWriter | None = None,
        stats: KvStats | None = None,
    ) -> None:
        self._ctx = ctx
        self._memory = llama_cpp.llama_get_memory(ctx)
        self._writer = writer
        self.stats = stats or KvStats()
        # The state just read for the writer, while the slot still holds it: with idle_aside
        # the next admission copies it to memory, and need not read it out again.
        self._fresh: dict[int, SetAside] = {}
        self._checkpoints = checkpoints
        # --cache-reuse moves cells to other positions: not in a sliding-window or recurrent cache
        self._can_shift = bool(llama_cpp.llama_memory_can_shift(self._memory))
        self._prompt_cache = prompt_cache
        self._idle_aside = idle_aside and prompt_cache is not None
        self._restores: list[Restore] = [] if prompt_cache is None else [prompt_cache.restore]
        self._restores += [] if restore is None else [restore]

    def start(self, slot: Slot, generation: Generation) -> int:
        """Ready ``slot``'s cache for ``generation``: how many prompt tokens it holds now."""
        prompt = generation.prompt
        # libmtmd evaluates a media prompt whole, from position 0.
        reuse = generation.cache_prompt and generation.media is None
        reused = reusable(slot, generation) if reuse else 0
        if reused < len(slot.tokens):
            self._set_aside(slot)  # about to be overwritten: not lost
        self._fresh.pop(slot.id, None)
        generation.restored = 0
        if reuse:
            scales = generation.adapter_scales
            # The router is told of a load as it begins (the activity view's "restoring").
            began = generation.restore_began if generation.notify_restore is not None else None
            for restore in self._restores:  # the copies in memory, then the saved files
                restored = restore(slot.id, prompt, reused, scales, began=began)
                if restored is not None:
                    slot.tokens, slot.adapter_scales = restored, scales
                    self._took_back(slot, restore)
                    reused = reusable(slot, generation)
                    self._count_hit(restore, reused)
                    generation.restored = reused
                    break
        if reuse and generation.n_cache_reuse > 0 and self._can_shift:
            reused = shift_chunks(self._memory, slot, prompt, reused, generation.n_cache_reuse)
        keep = min(reused, len(prompt) - 1)  # the last prompt token must be decoded for logits
        if self._checkpoints is not None:
            keep = self._checkpoints.resumable(slot.id, keep)
        if not llama_cpp.llama_memory_seq_rm(self._memory, slot.id, keep, -1):
            # Recurrent models cannot drop part of a sequence: start it over.
            llama_cpp.llama_memory_seq_rm(self._memory, slot.id, -1, -1)
            keep = 0
        slot.tokens = prompt[:keep]
        slot.adapter_scales = generation.adapter_scales
        generation.restored = min(generation.restored, keep)
        generation.restore_ended()
        return keep

    def prompt_chunk(self, slot: Slot, generation: Generation, room: int) -> int:
        """How many of ``generation``'s pending prompt tokens the next batch takes, at most
        ``room``; a checkpoint of the slot is taken first when one is due."""
        checkpoints = self._checkpoints
        # The last prompt token, split off after the rest was read (worker/engine/batching.py),
        # takes no checkpoint of its own: those due were taken before the rest.
        split_off = len(generation.pending) == 1 and generation.n_past > generation.cached
        if checkpoints is None or generation.media is not None or split_off:
            return min(room, len(generation.pending))
        n_prompt = len(generation.prompt)
        n_chunk = min(checkpoints.chunk(generation.n_past, n_prompt, room), len(generation.pending))
        checkpoints.before_chunk(slot.id, generation.n_past, n_chunk, n_prompt, slot.id_task)
        return n_chunk

    def _count_hit(self, restore: Restore, tokens: int) -> None:
        if self._prompt_cache is not None and restore == self._prompt_cache.restore:
            self.stats.hits_memory += 1
            self.stats.tokens_memory += tokens
        else:
            self.stats.hits_disk += 1
            self.stats.tokens_disk += tokens

    def finished(self, slot: Slot) -> None:
        """``slot``'s request is over: its state goes to the disk tier's writer. Read here,
        between decode steps, as llama.cpp's context allows; written in the background."""
        if self._writer is None or len(slot.tokens) < MIN_TOKENS:
            return
        started = time.perf_counter()
        size = llama_cpp.llama_state_seq_get_size(self._ctx, slot.id)
        state = seq_state(self._ctx, slot.id, size)
        self.stats.state_reads += 1
        self.stats.state_read_seconds += time.perf_counter() - started
        if state is None:
            return
        self._writer.put(SavedCache(list(slot.tokens), slot.adapter_scales), state)
        if self._idle_aside:
            self._fresh[slot.id] = SetAside(list(slot.tokens), state, slot.adapter_scales)

    def _set_aside(self, slot: Slot) -> None:
        """A copy of what ``slot`` holds in the prompt cache, with its checkpoints."""
        fresh = self._fresh.pop(slot.id, None)
        if self._prompt_cache is None:
            return
        state = fresh.state if fresh is not None and fresh.tokens == slot.tokens else None
        self._prompt_cache.keep(slot.id, slot.tokens, slot.adapter_scales, state)
        if self._checkpoints is not None:
            copies = [copy.tokens for copy in self._prompt_cache]
            self._checkpoints.set_aside(slot.id, slot.tokens, copies)

    def _took_back(self, slot: Slot, restore: Restore) -> None:
        """``slot`` holds what ``restore`` loaded: a copy in memory brings its checkpoints."""
        if self._checkpoints is None:
            return
        if self._prompt_cache is not None and restore == self._prompt_cache.restore:
            self._checkpoints.take_back(slot.id, slot.tokens)
        else:
            self._checkpoints.forget(slot.id)

    def forget(self, slot: Slot) -> None:
        """``slot``'s cache no longer continues the sequence its checkpoints were taken of."""
        if self._checkpoints is not None:
            self._checkpoints.forget(slot.id)

    def started(self, slots: Iterable[Slot]) -> None:
        """Generations have started in some of ``slots``: with ``idle_aside``, as llama-server
        with a unified KV cache, the idle ones' caches go to copies, so that no stream's tokens
        are computed against their cells (worker/cache/prompt_cache.py says what that costs)."""
        if self._idle_aside:
            self.set_idle_aside(slots)

    def set_idle_aside(self, slots: Iterable[Slot]) -> bool:
        """Free what idle slots hold, a copy of it in the prompt cache if there is one;
        whether there was any."""
        idle = [slot for slot in slots if slot.generation is None and slot.tokens]
        for slot in idle:
            self._set_aside(slot)
            llama_cpp.llama_memory_seq_rm(self._memory, slot.id, -1, -1)
            slot.tokens = []
            self.forget(slot)
        return bool(idle)
