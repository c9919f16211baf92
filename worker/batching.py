"""Continuous batching: ``--parallel`` sequences in one llama context (docs/protocol.md §6).

Every :meth:`BatchEngine.step` packs one token for each generating sequence and prompt chunks
of the sequences still reading their prompt into a single ``llama_decode``, then samples each
sequence with its own sampler chain. A sequence that finishes or is cancelled frees its slot at
once and a waiting request takes the slot mid-flight. Each slot remembers the tokens in its KV
cache, so a request that starts like an earlier one (a chat's next turn) only evaluates what is
new. Only the engine thread may call into this module.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import llama_cpp
import structlog

from worker.grammar_sampler import GrammarSampler
from worker.logit_bias import with_text_bias
from worker.sampling import SamplingParams, StopMatcher, TextAssembler, build_sampler, token_piece
from worker.token_probs import TokenProbs, token_probs

__all__ = [
    "BatchEngine",
    "Delta",
    "EngineMetrics",
    "Failed",
    "Finished",
    "Generation",
    "GenerationEvent",
]

_log = structlog.get_logger("corral.worker.batching")


class Delta(NamedTuple):
    text: str
    token: int
    probs: TokenProbs | None = None  # with the request's n_probs


class Finished(NamedTuple):
    reason: str  # "stop" (end of generation or a stop string) or "length"
    stop_word: str | None
    prompt_tokens: int
    cached_tokens: int
    predicted_tokens: int
    timings: dict[str, float]
    truncated: bool = False  # the context filled up: shifted (--context-shift) or stopped


class Failed(NamedTuple):
    message: str


GenerationEvent = Delta | Finished | Failed


@dataclass(eq=False)
class Generation:
    """One request's generation; ``emit`` receives its events on the engine thread."""

    prompt: list[int]
    params: SamplingParams
    max_tokens: int | None  # None: until the context is full
    emit: Callable[[GenerationEvent], None]
    stops: list[str] = field(default_factory=list)
    ignore_eos: bool = False
    cache_prompt: bool = True
    context_shift: bool = False  # a full context drops old tokens instead of ending
    n_keep: int = 0  # prompt tokens a shift keeps (after BOS); -1: the whole prompt
    truncated: bool = False
    n_probs: int = 0  # report the sampled token's and the top n tokens' probabilities
    post_sampling_probs: bool = False
    cancelled: bool = False  # set from the event loop; read here once per step
    # Progress, owned by the engine thread.
    n_past: int = 0
    pending: list[int] = field(default_factory=list)
    generated: int = 0
    cached: int = 0
    next_token: int | None = None  # sampled, not yet decoded
    grammar: GrammarSampler | None = None  # parsed on submit, handed to the sampler on admit
    sampler: Any = None
    batch_index: int = -1
    started: float = 0.0
    first_token: float = 0.0

    def __post_init__(self) -> None:
        self.text = TextAssembler()
        self.stop = StopMatcher(self.stops)


@dataclass
class EngineMetrics:
    """Counters behind the worker's ``llamacpp:*`` metrics, named as llama-server names them."""

    prompt_tokens: int = 0
    prompt_tokens_cached: int = 0
    prompt_seconds: float = 0.0
    tokens_predicted: int = 0
    tokens_predicted_seconds: float = 0.0
    n_decode: int = 0
    n_busy_slots: int = 0
    n_tokens_max: int = 0
    # Speculative decoding's counters, named as llama-server's /metrics families.
    n_draft_tokens: int = 0
    n_draft_accepted: int = 0
    n_draft_verif_steps: int = 0


@dataclass
class _Slot:
    id: int
    tokens: list[int] = field(default_factory=list)  # what its KV cache holds
    generation: Generation | None = None


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class BatchEngine:
    def __init__(
        self,
        ctx: Any,
        vocab: Any,
        n_vocab: int,
        n_parallel: int,
        n_batch: int,
        metrics: EngineMetrics | None = None,
    ) -> None:
        self._ctx = ctx
        self._memory = llama_cpp.llama_get_memory(ctx)
        self._vocab = vocab
        self._n_vocab = n_vocab
        self._n_batch = n_batch
        self.n_ctx_seq = llama_cpp.llama_n_ctx_seq(ctx)
        self.slots = [_Slot(i) for i in range(n_parallel)]
        self.waiting: deque[Generation] = deque()
        self.metrics = metrics or EngineMetrics()
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)

    def close(self) -> None:
        for generation in self.waiting:
            self._drop_grammar(generation)
        for slot in self.slots:
            if slot.generation is not None:
                self._release(slot)
        llama_cpp.llama_batch_free(self._batch)

    @property
    def busy(self) -> bool:
        return bool(self.waiting) or any(slot.generation for slot in self.slots)

    def describe_slots(self) -> list[dict[str, Any]]:
        """llama-server's ``/slots`` view (the fields Corral tracks)."""
        return [
            {
                "id": slot.id,
                "n_ctx": self.n_ctx_seq,
                "is_processing": slot.generation is not None,
                "n_cached_tokens": len(slot.tokens),
                "n_decoded": slot.generation.generated if slot.generation else 0,
            }
            for slot in self.slots
        ]

    def submit(self, generation: Generation) -> None:
        """Queue ``generation``; :class:`InvalidGrammar` when its grammar does not parse.

        The grammar is parsed here, once, against the vocabulary the model has now: the queue
        is drained before the model can sleep, so that vocabulary outlives the grammar.
        """
        if generation.params.grammar:
            generation.grammar = GrammarSampler(self._vocab, generation.params.grammar)
        if generation.params.text_bias:
            generation.params = with_text_bias(generation.params, self._vocab)
        self.waiting.append(generation)

    def step(self) -> None:
        """Admit, decode one batch, sample: one turn of the loop."""
        self._drop_cancelled()
        self._admit()
        active = self._fill_batch()
        if not active:
            return
        code = llama_cpp.llama_decode(self._ctx, self._batch)
        self.metrics.n_decode += 1
        self.metrics.n_busy_slots += len(active)
        if code != 0:
            for slot in active:
                self._fail(slot, f"llama_decode failed with code {code}")
            return
        for slot in active:
            generation = slot.generation
            if generation is not None and generation.batch_index >= 0:
                self._sample(slot, generation)

    def _drop_cancelled(self) -> None:
        for generation in self.waiting:
            if generation.cancelled:
                self._drop_grammar(generation)
        self.waiting = deque(g for g in self.waiting if not g.cancelled)
        for slot in self.slots:
            if slot.generation is not None and slot.generation.cancelled:
                _log.info("generation cancelled", slot=slot.id, tokens=slot.generation.generated)
                self._release(slot)

    def _admit(self) -> None:
        while self.waiting:
            free = [slot for slot in self.slots if slot.generation is None]
            if not free:
                return
            generation = self.waiting.popleft()
            prompt = generation.prompt
            # The free slot whose cache shares the longest prefix with this prompt.
            slot = max(free, key=lambda s: _common_prefix(s.tokens, prompt))
            keep = _common_prefix(slot.tokens, prompt) if generation.cache_prompt else 0
            keep = min(keep, len(prompt) - 1)  # the last prompt token must be decoded for logits
            if not llama_cpp.llama_memory_seq_rm(self._memory, slot.id, keep, -1):
                # Recurrent models cannot drop part of a sequence: start it over.
                llama_cpp.llama_memory_seq_rm(self._memory, slot.id, -1, -1)
                keep = 0
            slot.tokens = prompt[:keep]
            generation.n_past = generation.cached = keep
            generation.pending = prompt[keep:]
            generation.sampler = build_sampler(generation.params, generation.grammar, self._n_vocab)
            generation.grammar = None  # the chain owns it now
            generation.started = time.perf_counter()
            slot.generation = generation

    def _add(self, index: int, token: int, pos: int, seq: int, logits: bool) -> None:
        batch = self._batch
        batch.token[index] = token
        batch.pos[index] = pos
        batch.n_seq_id[index] = 1
        batch.seq_id[index][0] = seq
        batch.logits[index] = logits

    def _fill_batch(self) -> list[_Slot]:
        """One token per generating sequence first, then prompt chunks in the room left."""
        n = 0
        active: list[_Slot] = []
        for slot in self.slots:
            generation = slot.generation
            if generation is None:
                continue
            generation.batch_index = -1
            if generation.next_token is not None:
                self._add(n, generation.next_token, generation.n_past, slot.id, True)
                slot.tokens.append(generation.next_token)
                generation.n_past += 1
                generation.next_token = None
                generation.batch_index = n
                n += 1
                active.append(slot)
        for slot in self.slots:
            generation = slot.generation
            if generation is None or not generation.pending or n >= self._n_batch:
                continue
            chunk = generation.pending[: self._n_batch - n]
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

    def _sample(self, slot: _Slot, generation: Generation) -> None:
        token = llama_cpp.llama_sampler_sample(
            generation.sampler, self._ctx, generation.batch_index
        )
        if not generation.first_token:
            generation.first_token = time.perf_counter()
        if not generation.ignore_eos and llama_cpp.llama_vocab_is_eog(self._vocab, token):
            self._finish(slot, "stop")
            return
        generation.generated += 1
        generation.next_token = token
        text = generation.stop.feed(generation.text.feed(token_piece(self._vocab, token)))
        if text:
            probs = None
            if generation.n_probs:
                probs = token_probs(
                    self._ctx,
                    self._vocab,
                    generation.batch_index,
                    token,
                    generation.n_probs,
                    generation.params,
                    generation.post_sampling_probs,
                )
            generation.emit(Delta(text, token, probs))
        budget_spent = generation.max_tokens is not None and (
            generation.generated >= generation.max_tokens
        )
        context_full = generation.n_past + 1 >= self.n_ctx_seq  # no room for the next token
        if context_full and not budget_spent and generation.context_shift:
            context_full = not self._shift_context(slot, generation)
        if context_full:
            generation.truncated = True
        if generation.stop.matched is not None:
            self._finish(slot, "stop")
        elif budget_spent or context_full:
            self._finish(slot, "length")

    def _shift_context(self, slot: _Slot, generation: Generation) -> bool:
        """Drop the older half of what follows the kept prompt, as llama-server's context
        shift does; False when nothing can be dropped."""
        add_bos = int(llama_cpp.llama_vocab_get_add_bos(self._vocab))
        n_keep = len(generation.prompt) if generation.n_keep < 0 else generation.n_keep + add_bos
        n_discard = (generation.n_past - n_keep) // 2
        if n_discard <= 0:
            return False
        llama_cpp.llama_memory_seq_rm(self._memory, slot.id, n_keep, n_keep + n_discard)
        llama_cpp.llama_memory_seq_add(
            self._memory, slot.id, n_keep + n_discard, generation.n_past, -n_discard
        )
        del slot.tokens[n_keep : n_keep + n_discard]
        generation.n_past -= n_discard
        generation.truncated = True
        return True

    def _finish(self, slot: _Slot, reason: str) -> None:
        generation = slot.generation
        assert generation is not None
        if generation.stop.matched is None:
            tail = generation.stop.feed(generation.text.finish()) + generation.stop.flush()
            if tail:
                generation.emit(Delta(tail, -1))
        now = time.perf_counter()
        first = generation.first_token or now
        prompt_n = len(generation.prompt) - generation.cached
        prompt_ms = (first - generation.started) * 1000
        predicted_ms = (now - first) * 1000
        # The first token comes with the prompt's last batch: the rate is over the decode steps
        # after it, as llama-server's (server-common.h, n_gen_steps).
        steps = max(generation.generated - 1, 0)
        timings = {
            "cache_n": generation.cached,
            "prompt_n": prompt_n,
            "prompt_ms": prompt_ms,
            "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else 0.0,
            "prompt_per_second": prompt_n * 1000 / prompt_ms if prompt_ms else 0.0,
            "predicted_n": generation.generated,
            "predicted_ms": predicted_ms,
            "predicted_per_token_ms": predicted_ms / steps if steps else 0.0,
            "predicted_per_second": steps * 1000 / predicted_ms if predicted_ms else 0.0,
        }
        metrics = self.metrics
        metrics.prompt_tokens += prompt_n
        metrics.prompt_tokens_cached += generation.cached
        metrics.prompt_seconds += prompt_ms / 1000
        metrics.tokens_predicted += generation.generated
        metrics.tokens_predicted_seconds += predicted_ms / 1000
        metrics.n_tokens_max = max(metrics.n_tokens_max, generation.n_past)
        generation.emit(
            Finished(
                reason,
                generation.stop.matched,
                len(generation.prompt),
                generation.cached,
                generation.generated,
                timings,
                generation.truncated,
            )
        )
        self._release(slot)

    def _fail(self, slot: _Slot, message: str) -> None:
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

    def _release(self, slot: _Slot) -> None:
        generation = slot.generation
        if generation is not None and generation.sampler is not None:
            llama_cpp.llama_sampler_free(generation.sampler)
            generation.sampler = None
        slot.generation = None
