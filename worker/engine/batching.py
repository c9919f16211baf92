"""Continuous batching: ``--parallel`` sequences in one llama context (docs/protocol.md §6).

With ``--courtesy-slot`` the context decodes one sequence more, which no slot list shows and
no ``id_slot`` names: a request takes it only while every slot is busy, which the router allows
only for a request that would otherwise wait behind another caller's (docs/serving.md,
"Scheduling").

Every :meth:`BatchEngine.step` packs one token for each generating sequence and prompt chunks
of the sequences still reading their prompt into a single ``llama_decode``, then samples each
sequence with its own sampler chain. A sequence that finishes or is cancelled frees its slot at
once and a waiting request takes the slot mid-flight. Each slot remembers the tokens in its KV
cache, so a request that starts like an earlier one (a chat's next turn) only evaluates what is
new. Sequences decoded with different LoRA adapter scales never share a step: the sets take
turns (:mod:`worker.engine.lora_adapters`). Only the engine thread may call into this module.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog

from worker.cache.slot_cache import Slot, SlotCaches, reusable
from worker.engine.context_shift import shift_context
from worker.engine.generation import EngineMetrics, Failed, Generation
from worker.engine.lora_adapters import AdapterScales, LoraAdapters
from worker.host.llama_bindings import llama_cpp
from worker.sampling.chain import Candidates, Sampler
from worker.sampling.grammar_sampler import GrammarSampler
from worker.sampling.logit_bias import with_text_bias
from worker.sampling.text import token_piece
from worker.sampling.token_probs import token_probs
from worker.speculative import Speculator
from worker.speculative.drafts import propose_drafts

__all__ = ["BatchEngine", "slot_index"]

_log = structlog.get_logger("corral.worker.batching")
# llama_decode: no room in the KV cache for the batch (include/llama.h).
_NO_KV_ROOM = 1


def slot_index(id_slot: int, n_slots: int) -> int:
    """Which slot an id names: upstream wraps it around (``id_slot % slots.size()``, in C's
    unsigned arithmetic, so -1 is the last slot of two)."""
    return (id_slot % (1 << 64)) % n_slots


class BatchEngine:
    def __init__(
        self,
        ctx: Any,
        vocab: Any,
        n_vocab: int,
        n_parallel: int,
        n_batch: int,
        metrics: EngineMetrics | None = None,
        adapters: LoraAdapters | None = None,
        courtesy: int = 0,
        speculator: Speculator | None = None,
        caches: SlotCaches | None = None,
        slot_cap: Callable[[int], int] = lambda n_ctx_seq: n_ctx_seq,
    ) -> None:
        self._ctx = ctx
        self._caches = caches or SlotCaches(ctx)
        self._speculator = speculator
        self._memory = llama_cpp.llama_get_memory(ctx)
        self._vocab = vocab
        self._n_vocab = n_vocab
        self._n_batch = n_batch
        self.n_ctx_seq = slot_cap(llama_cpp.llama_n_ctx_seq(ctx))  # --kv-unified-per-slot
        # Every sequence the context decodes; the slots the API shows are the first ones.
        self.sequences = [Slot(i) for i in range(n_parallel + courtesy)]
        self.slots = self.sequences[:n_parallel]
        self._candidates: dict[int, Candidates] = {}  # each slot's draw array, made on first use
        self.waiting: deque[Generation] = deque()
        self.metrics = metrics or EngineMetrics()
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._admitted = 0
        self._adapters = adapters or LoraAdapters()
        self._turn = -1  # the slot whose adapter scales the last step decoded with

    def close(self) -> None:
        for generation in self.waiting:
            self._drop_grammar(generation)
        for slot in self.sequences:
            if slot.generation is not None:
                self._release(slot)
        llama_cpp.llama_batch_free(self._batch)

    @property
    def busy(self) -> bool:
        return bool(self.waiting) or any(slot.generation for slot in self.sequences)

    def submit(self, generation: Generation) -> None:
        """Queue ``generation``; :class:`InvalidGrammar` when its grammar does not parse.

        The grammar is parsed here, once, against the vocabulary the model has now: the queue
        is drained before the model can sleep, so that vocabulary outlives the grammar.
        """
        if generation.params.grammar:
            generation.grammar = GrammarSampler(
                self._vocab, generation.params.grammar, generation.params.grammar_triggers
            )
        generation.adapter_scales = self._adapters.scales_for(generation.lora)
        if generation.params.text_bias:
            generation.params = with_text_bias(generation.params, self._vocab)
        self.waiting.append(generation)

    def save_idle(self) -> bool:
        """No generation runs: one slot state a request's end left unsaved goes to the disk
        tier (worker/cache/slot_cache.py); whether there was one."""
        return self._caches.save_idle(self.sequences)

    def save_cache(self, slot: Slot) -> None:
        """A slot action is about to overwrite ``slot``'s cells: unsaved, they are saved first."""
        self._caches.save(slot)

    def step(self) -> None:
        """Admit, decode one batch, sample: one turn of the loop."""
        self._caches.save_overdue(self.sequences)
        self._drop_cancelled()
        self._admit()
        scales = self._scales_this_step()
        if self._speculator is not None:
            sequences = [(slot.id, slot.tokens, slot.generation) for slot in self.sequences]
            propose_drafts(self._speculator, sequences, self._n_batch, self.n_ctx_seq)
        active = self._fill_batch(scales)
        if not active:
            return
        self._adapters.apply(self._ctx, scales)
        code = llama_cpp.llama_decode(self._ctx, self._batch)
        # With a unified KV cache (llama-server's automatic slots) the slots share one pool, so
        # the prompts idle slots keep can leave a busy one no room; as llama-server, they give
        # way. llama.cpp finds room for a whole batch before it decodes any of it, so the batch
        # can simply be decoded again.
        if code == _NO_KV_ROOM and self._caches.set_idle_aside(self.sequences):
            code = llama_cpp.llama_decode(self._ctx, self._batch)
        self.metrics.n_decode += 1
        self.metrics.n_busy_slots += len(active)
        if code != 0:
            for slot in active:
                self._fail(slot, f"llama_decode failed with code {code}")
            return
        for slot in active:
            generation = slot.generation
            if generation is not None:
                generation.report_progress()
                if generation.batch_index >= 0:
                    self._sample(slot, generation)

    def _drop_cancelled(self) -> None:
        for generation in self.waiting:
            if generation.cancelled:
                self._drop_grammar(generation)
        self.waiting = deque(g for g in self.waiting if not g.cancelled)
        for slot in self.sequences:
            if slot.generation is not None and slot.generation.cancelled:
                _log.info("generation cancelled", slot=slot.id, tokens=slot.generation.generated)
                self._release(slot)

    def _admit(self) -> None:
        admitted = self._admitted
        self._admit_waiting()
        if self._admitted != admitted:
            self._caches.started(self.sequences)

    def _admit_waiting(self) -> None:
        while self.waiting:
            # A courtesy sequence only while every slot is busy: /slots shows what runs.
            free = [slot for slot in self.slots if slot.generation is None] or [
                slot for slot in self.sequences if slot.generation is None
            ]
            if not free:
                return
            generation = self.waiting[0]
            # The slot the request named (wrapped around, as upstream; the queue waits while it
            # is busy), else the free one whose cache shares the longest prefix with the prompt.
            if generation.id_slot == -1:
                slot = max(free, key=lambda s: reusable(s, generation))
            else:
                slot = self.slots[slot_index(generation.id_slot, len(self.slots))]
                if slot.generation is not None:
                    return
            self.waiting.popleft()
            generation.started = time.perf_counter()  # a restore below counts as prompt time
            keep = self._caches.start(slot, generation)
            generation.n_past = generation.cached = keep
            generation.pending = generation.prompt[keep:]
            generation.report_progress()
            generation.sampler = self._sampler(slot, generation)
            generation.grammar = None  # the sampler owns it now
            slot.generation = slot.last = generation
            slot.id_task, self._admitted = self._admitted, self._admitted + 1
            if self._speculator is not None:
                self._speculator.begin(slot.id, generation.params.seed, generation.prompt)
            if generation.media is not None:
                # Its first token comes from the last logits, before the next batch overwrites
                # them; the other slots wait meanwhile.
                try:
                    generation.evaluate_media(self._ctx, slot.id, self._n_batch)
                except RuntimeError as exc:
                    self._fail(slot, str(exc))
                    continue
                slot.tokens = list(generation.prompt)
                self._sample(slot, generation)

    def _sampler(self, slot: Slot, generation: Generation) -> Sampler:
        """The generation's sampler, its penalties already counting the prompt, as upstream's."""
        candidates = self._candidates.get(slot.id)
        if candidates is None:
            candidates = self._candidates[slot.id] = Candidates(self._n_vocab)
        reports_candidates = generation.n_probs > 0 and generation.post_sampling_probs
        sampler = Sampler(
            generation.params,
            generation.grammar,
            self._vocab,
            self._n_vocab,
            candidates,
            reports_candidates,
        )
        sampler.accept_prompt(generation.prompt)
        return sampler

    def _add(self, index: int, token: int, pos: int, seq: int, logits: bool) -> None:
        batch = self._batch
        batch.token[index] = token
        batch.pos[index] = pos
        batch.n_seq_id[index] = 1
        batch.seq_id[index][0] = seq
        batch.logits[index] = logits

    def _scales_this_step(self) -> AdapterScales:
        """The adapter scales of the next busy slot after the last step's: sets take turns."""
        busy = [slot for slot in self.sequences if slot.generation is not None]
        if not busy:
            return ()
        chosen = next((slot for slot in busy if slot.id > self._turn), busy[0])
        self._turn = chosen.id
        assert chosen.generation is not None
        return chosen.generation.adapter_scales

    def _fill_batch(self, scales: AdapterScales) -> list[Slot]:
        """One token per generating sequence first, then prompt chunks in the room left.

        Only sequences decoded with ``scales`` take part; the others wait for their turn.
        """
        n = 0
        active: list[Slot] = []
        for slot in self.sequences:
            generation = slot.generation
            if generation is None:
                continue
            generation.batch_index = -1
            if generation.adapter_scales != scales:
                continue
            if generation.next_token is not None:
                self._add(n, generation.next_token, generation.n_past, slot.id, True)
                slot.tokens.append(generation.next_token)
                generation.n_past += 1
                generation.next_token = None
                generation.batch_index = n
                n += 1
                for i, guess in enumerate(generation.draft):
                    self._add(n + i, guess, generation.n_past + i, slot.id, True)
                n += len(generation.draft)
                generation.draft_n += len(generation.draft)
                self.metrics.draft_tokens += len(generation.draft)
                self.metrics.drafts += bool(generation.draft)
                active.append(slot)
        for slot in self.sequences:
            generation = slot.generation
            if generation is None or not generation.pending or n >= self._n_batch:
                continue
            if generation.adapter_scales != scales:
                continue
            # The last prompt token gets a step of its own, read fresh or cached: its logits come
            # from the same kernels either way (docs/serving.md, "Repeatable answers").
            room = min(self._n_batch - n, max(1, len(generation.pending) - 1))
            chunk = generation.pending[: self._caches.prompt_chunk(slot, generation, room)]
            last = len(chunk) == len(generation.pending)
            for i, token in enumerate(chunk):
                is_last = last and i == len(chunk) - 1
                self._add(n, token, generation.n_past + i, slot.id, is_last)
                if is_last:
                    generation.batch_index = n
                n += 1
            slot.tokens.extend(chunk)
            generation.n_past += len(chunk)
            generation.pending = generation.pending[len(chunk) :]
            active.append(slot)
        self._batch.n_tokens = n
        return active

    def _sample(self, slot: Slot, generation: Generation) -> None:
        """Sample the sequence's next token; with guesses, keep them while the sampler agrees.

        A kept guess is already in the KV cache, so the next position's logits are in the batch
        too; the first disagreement is the next token, and the guesses after it are dropped.
        """
        draft, generation.draft = generation.draft, []
        speculator = self._speculator
        sampler = generation.sampler
        assert sampler is not None
        kept_count = 0
        try:
            for i in range(len(draft) + 1):
                sampled = sampler.sample(self._ctx, generation.batch_index + i)
                kept = False
                if i < len(draft) and speculator is not None:
                    kept = speculator.keeps(slot.id, i, draft[i], sampled)
                token = draft[i] if kept else sampled
                sampler.accept(token, generated=token == sampled)
                if not self._take(slot, generation, token, generation.batch_index + i):
                    return  # finished: the next request in the slot drops the rest of the cache
                if not kept:
                    break
                generation.next_token = None
                slot.tokens.append(token)
                generation.n_past += 1
                generation.draft_accepted += 1
                self.metrics.draft_accepted += 1
                kept_count += 1
        finally:
            if draft and speculator is not None:
                speculator.accepted(slot.id, kept_count)  # as llama-server, finished or not
        if draft:
            llama_cpp.llama_memory_seq_rm(self._memory, slot.id, generation.n_past, -1)

    def _take(self, slot: Slot, generation: Generation, token: int, index: int) -> bool:
        """Emit a token sampled from the logits at batch ``index``; False when it finished the
        generation."""
        if not generation.first_token:
            generation.first_token = time.perf_counter()
        if not generation.ignore_eos and llama_cpp.llama_vocab_is_eog(self._vocab, token):
            self._finish(slot, "stop")
            return False
        generation.generated += 1
        generation.next_token = token
        piece = token_piece(self._vocab, token)
        text = generation.stop.feed(generation.text.feed(piece))
        end = generation.indent.feed(text)
        if text:
            probs = None
            if generation.n_probs and generation.sampler is not None:
                probs = token_probs(
                    generation.sampler.candidates,
                    self._ctx,
                    self._vocab,
                    index,
                    token,
                    generation.n_probs,
                    generation.post_sampling_probs,
                )
            generation.emit(generation.delta(text, token, probs))
        budget_spent = generation.max_tokens is not None and (
            generation.generated >= generation.max_tokens
        )
        context_full = generation.n_past + 1 >= self.n_ctx_seq  # no room for the next token
        if context_full and not budget_spent and generation.context_shift:
            context_full = not shift_context(
                self._memory, self._vocab, slot.id, slot.tokens, generation
            )
            self._caches.forget(slot)  # positions moved: its checkpoints no longer fit
        if context_full:
            generation.truncated = True
        if generation.stop.matched is not None:
            self._finish(slot, "stop")
        elif end is not None:
            generation.length = end
            self._finish(slot, "length")
        elif budget_spent or context_full or self._out_of_time(generation, piece):
            self._finish(slot, "length")
        else:
            return True
        return False

    @staticmethod
    def _out_of_time(generation: Generation, piece: bytes) -> bool:
        """llama-server's ``t_max_predict_ms``: a new line after the time is up ends it."""
        if generation.max_predict_ms <= 0 or b"\n" not in piece:
            return False
        return (time.perf_counter() - generation.first_token) * 1000 > generation.max_predict_ms

    def _finish(self, slot: Slot, reason: str) -> None:
        generation = slot.generation
        assert generation is not None
        if generation.stop.matched is None:
            tail = generation.stop.feed(generation.text.finish()) + generation.stop.flush()
            if tail:
                generation.emit(generation.delta(tail, -1))
        timings = generation.timings(time.perf_counter())
        self.metrics.count_finished(generation, timings)
        generation.emit(generation.finished(reason, timings, slot.id))
        self._release(slot)

    def _fail(self, slot: Slot, message: str) -> None:
        generation = slot.generation
        assert generation is not None
        generation.emit(Failed(message))
        llama_cpp.llama_memory_seq_rm(self._memory, slot.id, -1, -1)
        slot.tokens = []
        self._release(slot)

    @staticmethod
    def _drop_grammar(generation: Generation) -> None:
        if generation.grammar is not None:
            generation.grammar.free()
            generation.grammar = None

    def _release(self, slot: Slot) -> None:
        generation = slot.generation
        if generation is not None and generation.sampler is not None:
            generation.sampler.free()
            generation.sampler = None
        slot.generation = None
        self._caches.finished(slot)  # its state is unsaved: the disk tier reads it when idle
