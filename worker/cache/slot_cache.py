"""What each slot's KV cache holds, and where a prompt's start comes from: the slot's own cache,
a copy set aside in host memory (:mod:`worker.cache.prompt_cache`) or a file written to disk
(:mod:`worker.cache.kv_store`), by this worker or an earlier one.

A request's end leaves its slot's state *unsaved*: reading it out of the context (for the disk
tier's writer, :mod:`worker.cache.kv_writer`) would pause every other stream's decoding, so it
is read when the engine has no generation running (:meth:`SlotCaches.save_idle`), when
something is about to overwrite those cells (a prompt, a set-aside, a slot action; a set-aside's
own read serves the writer too), or once it has waited :data:`SAVE_WITHIN` seconds of a busy
engine. Only the engine thread calls into this module.
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

__all__ = ["SAVE_WITHIN", "Restore", "Slot", "SlotCaches", "reusable"]

# A state left unsaved in an idle slot this long while other streams kept the engine busy is
# read between two decode steps after all: it bounds how long a SIGKILL can find it unwritten
# (docs/serving.md, "KV cache across restarts"). Long enough that an agent's next turn (which
# continues the slot, so that its own end saves all of it) or an idle moment usually comes
# first; short against how long a conversation is worth keeping.
SAVE_WITHIN = 30.0


class Restore(Protocol):
    """(seq, prompt, tokens the slot already reuses, adapter scales, cache scope) → the tokens
    the sequence holds after loading a saved cache made under those scales in that scope into
    it, or None when nothing was loaded; ``began`` is called just before a load starts."""

    def __call__(
        self,
        seq: int,
        prompt: list[int],
        have: int,
        scales: AdapterScales,
        scope: str,
        *,
        began: Callable[[], None] | None = None,
    ) -> list[int] | None: ...


@dataclass
class Slot:
    id: int
    tokens: list[int] = field(default_factory=list)  # what its KV cache holds
    adapter_scales: AdapterScales = ()  # the LoRA scales that cache was computed with
    scope: str = ""  # the cache scope of the requests that computed it
    generation: Generation | None = None
    last: Generation | None = None  # the latest generation it ran, for ``/slots``
    id_task: int = -1  # which admitted generation that was, counted from 0

    @property
    def held(self) -> SavedCache:
        """What its cache holds, as the disk tier saves it."""
        return SavedCache(list(self.tokens), self.adapter_scales, self.scope)


def reusable(slot: Slot, generation: Generation) -> int:
    """How many cached tokens of ``slot`` can serve ``generation``'s prompt.

    None of them when the cache was computed under other LoRA adapter scales, or for a request
    of another cache scope (worker/host/cache_scope.py): what another key asked is neither
    reused nor, through ``cached_tokens``, told.
    """
    if (slot.adapter_scales, slot.scope) != (generation.adapter_scales, generation.cache_scope):
        return 0
    return common_prefix(slot.tokens, generation.prompt)


class SlotCaches:
    """The slots' caches in the context ``ctx``.

    ``prompt_cache`` keeps a copy of a slot's cache that a prompt is about to overwrite and,
    with ``idle_aside`` (a KV cache shared by the slots), of every idle slot's cache, cleared
    once a generation has started. Copies are restored before ``restore``'s saved files are
    tried. A copy or a saved cache carries the adapter scales it was computed under and its
    cache scope, and only serves a generation decoded with the same in the same scope.
    ``writer``: the disk tier, which gets each slot's state once its request has ended (when is
    the module's docstring); ``stats`` counts what came back from where, and the reads made for
    the writer.
    ``checkpoints``, for a model whose state cannot all be cut back (a sliding window, a
    recurrent state), says how much of a cut cache can be resumed and when to take checkpoints.
    ``clock``: what :data:`SAVE_WITHIN` is measured with.
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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ctx = ctx
        self._clock = clock
        self._memory = llama_cpp.llama_get_memory(ctx)
        self._writer = writer
        self.stats = stats or KvStats()
        # Slots whose request ended and whose state the writer has not had yet: slot id → when.
        self._unsaved: dict[int, float] = {}
        # The state an idle moment read for the writer, while the slot still holds it: with
        # idle_aside the next admission copies it to memory, and need not read it out again.
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
            self._set_aside(slot)  # about to be overwritten: not lost, and written if unsaved
        self._fresh.pop(slot.id, None)
        generation.restored = 0
        scope = generation.cache_scope
        if reuse:
            scales = generation.adapter_scales
            # The router is told of a load as it begins (the activity view's "restoring").
            began = generation.restore_began if generation.notify_restore is not None else None
            for restore in self._restores:  # the copies in memory, then the saved files
                restored = restore(slot.id, prompt, reused, scales, scope, began=began)
                if restored is not None:
                    # What the slot held was all set aside, or it is a prefix of the prompt
                    # that the loaded copy, sharing more of the prompt, holds too.
                    self._unsaved.pop(slot.id, None)
                    slot.tokens, slot.adapter_scales, slot.scope = restored, scales, scope
                    self._took_back(slot, restore)
                    reused = reusable(slot, generation)
                    self._count_hit(restore, reused)
                    generation.restored = reused
                    break
        # Chunks of another scope's prompt are as telling as its start.
        if reuse and generation.n_cache_reuse > 0 and self._can_shift and slot.scope == scope:
            reused = shift_chunks(self._memory, slot, prompt, reused, generation.n_cache_reuse)
        keep = min(reused, len(prompt) - 1)  # the last prompt token must be decoded for logits
        if self._checkpoints is not None:
            keep = self._checkpoints.resumable(slot.id, keep)
        if keep < len(slot.tokens) and slot.id in self._unsaved:
            self._save(slot, idle=False)  # the prompt continues it, but cells of it go
        # Kept whole, it is the start of this request's, which the request's end saves.
        self._unsaved.pop(slot.id, None)
        if not llama_cpp.llama_memory_seq_rm(self._memory, slot.id, keep, -1):
            # Recurrent models cannot drop part of a sequence: start it over.
            llama_cpp.llama_memory_seq_rm(self._memory, slot.id, -1, -1)
            keep = 0
        slot.tokens = prompt[:keep]
        slot.adapter_scales, slot.scope = generation.adapter_scales, scope
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
        """``slot``'s request is over: its state is left unsaved, for an idle moment to read."""
        if self._writer is not None and len(slot.tokens) >= MIN_TOKENS:
            self._unsaved[slot.id] = self._clock()

    def save_idle(self, slots: Iterable[Slot]) -> bool:
        """The engine has no generation running: read one unsaved slot's state for the writer;
        whether there was one (the engine calls again until there is none or work came)."""
        slot = next((s for s in slots if s.id in self._unsaved and s.generation is None), None)
        if slot is not None:
            self._save(slot, idle=True)
        return slot is not None

    def save_overdue(self, slots: Iterable[Slot]) -> None:
        """Between two decode steps: read one state left unsaved for :data:`SAVE_WITHIN`."""
        if not self._unsaved:
            return
        due = self._clock() - SAVE_WITHIN
        for slot in slots:
            ended = self._unsaved.get(slot.id)
            if ended is not None and ended <= due and slot.generation is None:
                self._save(slot, idle=False)
                return

    def save(self, slot: Slot) -> None:
        """Something other than a request is about to overwrite ``slot``'s cells (a slot
        action): its state goes to the writer first if it is unsaved."""
        if slot.id in self._unsaved:
            self._save(slot, idle=False)

    def _save(self, slot: Slot, idle: bool) -> None:
        """Read ``slot``'s state out of the context and hand it to the writer: at an idle
        moment, or between two decode steps (every other stream waits meanwhile)."""
        self._unsaved.pop(slot.id, None)
        if self._writer is None:
            return
        started = time.perf_counter()
        size = llama_cpp.llama_state_seq_get_size(self._ctx, slot.id)
        state = seq_state(self._ctx, slot.id, size)
        self.stats.count_read(idle, time.perf_counter() - started)
        if state is None:
            return
        self._writer.put(slot.held, state)
        if idle and self._idle_aside:
            self._fresh[slot.id] = SetAside(
                list(slot.tokens), state, slot.adapter_scales, slot.scope
            )

    def _set_aside(self, slot: Slot) -> None:
        """A copy of what ``slot`` holds in the prompt cache, with its checkpoints."""
        fresh = self._fresh.pop(slot.id, None)
        if self._prompt_cache is None:
            self.save(slot)
            return
        state = fresh.state if fresh is not None and fresh.tokens == slot.tokens else None
        if self._prompt_cache.keep(slot.id, slot.tokens, slot.adapter_scales, state, slot.scope):
            self._unsaved.pop(slot.id, None)  # the copy went to the writer too: one read
        else:
            self.save(slot)  # larger than --cache-ram: read for the writer alone
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
