"""Continuous batching: ``--parallel`` sequences in one llama context (docs/protocol.md §6).

Every :meth:`BatchEngine.step` packs one token for each generating sequence and prompt chunks
of the sequences still reading their prompt into a single ``llama_decode``, then samples each
sequence with its own sampler chain. A sequence that finishes or is cancelled frees its slot at
once and a waiting request takes the slot mid-flight. Each slot remembers the tokens in its KV
cache, so a request that starts like an earlier one (a chat's next turn) only evaluates what is
new. Sequences decoded with different LoRA adapter scales never share a step: the sets take
turns (:mod:`worker.lora_adapters`). Only the engine thread may call into this module.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import structlog

from worker.grammar_sampler import GrammarSampler
from worker.llama_bindings import llama_cpp
from worker.logit_bias import with_text_bias
from worker.lora_adapters import AdapterScales, LoraAdapters
from worker.media.projector import MediaPrompt
from worker.sampling import SamplingParams, StopMatcher, TextAssembler, build_sampler, token_piece
from worker.speculative import DraftRequest, Speculator
from worker.token_prefix import common_prefix
from worker.token_probs import TokenProbs, token_probs

__all__ = [
    "BatchEngine",
    "Delta",
    "EngineMetrics",
    "Failed",
    "Finished",
    "Generation",
    "GenerationEvent",
    "Restore",
    "common_prefix",
]

_log = structlog.get_logger("corral.worker.batching")
# llama_decode: no room in the KV cache for the batch (include/llama.h).
_NO_KV_ROOM = 1


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
    lora: dict[int, float] | None = None  # the request's adapter scales; None: the global ones
    context_shift: bool = False  # a full context drops old tokens instead of ending
    n_keep: int = 0  # prompt tokens a shift keeps (after BOS); -1: the whole prompt
    truncated: bool = False
    n_probs: int = 0  # report the sampled token's and the top n tokens' probabilities
    post_sampling_probs: bool = False
    cancelled: bool = False  # set from the event loop; read here once per step
    media: MediaPrompt | None = None  # a prompt with images or audio; ``prompt`` counts them
    # Progress, owned by the engine thread.
    n_past: int = 0
    pending: list[int] = field(default_factory=list)
    generated: int = 0
    cached: int = 0
    next_token: int | None = None  # sampled, not yet decoded
    adapter_scales: AdapterScales = ()  # fixed on submit
    grammar: GrammarSampler | None = None  # parsed on submit, handed to the sampler on admit
    sampler: Any = None
    batch_index: int = -1
    draft: list[int] = field(default_factory=list)  # guesses decoded after next_token
    # Media positions hold no token a draft model or an n-gram could read (MEDIA_TOKEN).
    draftable: bool = True
    draft_n: int = 0  # guesses verified, and how many of them were kept
    draft_accepted: int = 0
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
    draft_tokens: int = 0  # speculative decoding: tokens guessed, guesses kept, batches verified
    draft_accepted: int = 0
    drafts: int = 0


# (seq, prompt, tokens the slot already reuses) → the tokens the sequence holds after loading a
# saved cache into it, or None when nothing was loaded (worker/kv_store.py).
Restore = Callable[[int, list[int], int], list[int] | None]


@dataclass
class _Slot:
    id: int
    tokens: list[int] = field(default_factory=list)  # what its KV cache holds
    adapter_scales: AdapterScales = ()  # the LoRA scales that cache was computed with
    generation: Generation | None = None
    last: Generation | None = None  # the latest generation it ran, for ``/slots``
    id_task: int = -1  # which admitted generation that was, counted from 0


def _reusable(slot: _Slot, generation: Generation) -> int:
    """How many cached tokens of ``slot`` can serve ``generation``'s prompt.

    None of them when the cache was computed under other LoRA adapter scales.
    """
    if slot.adapter_scales != generation.adapter_scales:
        return 0
    return common_prefix(slot.tokens, generation.prompt)


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
        restore: Restore | None = None,
        speculator: Speculator | None = None,
    ) -> None:
        self._ctx = ctx
        self._restore = restore
        self._speculator = speculator
        self._memory = llama_cpp.llama_get_memory(ctx)
        self._vocab = vocab
        self._n_vocab = n_vocab
        self._n_batch = n_batch
        self.n_ctx_seq = llama_cpp.llama_n_ctx_seq(ctx)
        self.slots = [_Slot(i) for i in range(n_parallel)]
        self.waiting: deque[Generation] = deque()
        self.metrics = metrics or EngineMetrics()
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._admitted = 0
        self._adapters = adapters or LoraAdapters()
        self._turn = -1  # the slot whose adapter scales the last step decoded with

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

    def step(self) -> None:
        """Admit, decode one batch, sample: one turn of the loop."""
        self._drop_cancelled()
        self._admit()
        scales = self._scales_this_step()
        if self._speculator is not None:
            self._propose_drafts(self._speculator)
        active = self._fill_batch(scales)
        if not active:
            return
        self._adapters.apply(self._ctx, scales)
        code = llama_cpp.llama_decode(self._ctx, self._batch)
        if code == _NO_KV_ROOM and self._forget_idle_caches():
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

    def _forget_idle_caches(self) -> bool:
        """Free what idle slots keep cached; whether there was any.

        With a unified KV cache (llama-server's automatic slots) the slots share one pool, so
        the prompts idle slots keep for reuse can leave a busy one no room; as llama-server,
        they give way. llama.cpp finds room for a whole batch before it decodes any of it, so
        the batch can simply be decoded again.
        """
        idle = [slot for slot in self.slots if slot.generation is None and slot.tokens]
        for slot in idle:
            llama_cpp.llama_memory_seq_rm(self._memory, slot.id, -1, -1)
            slot.tokens = []
        return bool(idle)

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
            generation.started = time.perf_counter()  # a restore below counts as prompt time
            prompt = generation.prompt
            # The free slot whose cache shares the longest prefix with this prompt.
            slot = max(free, key=lambda s: _reusable(s, generation))
            # libmtmd evaluates a media prompt whole, from position 0.
            reuse = generation.cache_prompt and generation.media is None
            # A saved cache carries no adapter scales: only a slot that has never run one
            # (scales ``()``) takes it, for a generation that runs none either.
            if (
                reuse
                and self._restore is not None
                and slot.adapter_scales == generation.adapter_scales == ()
            ):
                restored = self._restore(slot.id, prompt, _reusable(slot, generation))
                if restored is not None:
                    slot.tokens = restored
            keep = _reusable(slot, generation) if reuse else 0
            keep = min(keep, len(prompt) - 1)  # the last prompt token must be decoded for logits
            if not llama_cpp.llama_memory_seq_rm(self._memory, slot.id, keep, -1):
                # Recurrent models cannot drop part of a sequence: start it over.
                llama_cpp.llama_memory_seq_rm(self._memory, slot.id, -1, -1)
                keep = 0
            slot.tokens = prompt[:keep]
            slot.adapter_scales = generation.adapter_scales
            generation.n_past = generation.cached = keep
            generation.pending = prompt[keep:]
            generation.sampler = build_sampler(generation.params, generation.grammar, self._n_vocab)
            generation.grammar = None  # the chain owns it now
            slot.generation = slot.last = generation
            slot.id_task, self._admitted = self._admitted, self._admitted + 1
            if self._speculator is not None:
                self._speculator.begin(slot.id, generation.params.seed)
            if generation.media is not None:
                self._evaluate_media(slot, generation, generation.media)

    def _evaluate_media(self, slot: _Slot, generation: Generation, media: MediaPrompt) -> None:
        """Run a media prompt now, in libmtmd's own decodes, and sample its first token from the
        last logits, before the next batch overwrites them. The other slots wait meanwhile."""
        generation.media = None
        generation.draftable = False
        # Media embeddings sit at positions a shift cannot move (M-RoPE counts image rows): a
        # full context ends the generation, as llama-server turns context shift off with an mmproj.
        generation.context_shift = False
        try:
            generation.n_past = media.evaluate(self._ctx, slot.id, self._n_batch)
        except RuntimeError as exc:
            self._fail(slot, str(exc))
            return
        slot.tokens = list(generation.prompt)
        generation.pending = []
        generation.batch_index = -1  # the last logits
        self._sample(slot, generation)

    def _propose_drafts(self, speculator: Speculator) -> None:
        """Guesses for every generating sequence, verified in this step's batch."""
        generating = [
            slot
            for slot in self.slots
            if slot.generation is not None
            and slot.generation.next_token is not None
            and slot.generation.draftable
        ]
        # Room in the batch for each sequence's token and guesses, and in its context for the
        # guesses and one more token, so a context shift never lands among a step's guesses;
        # no guess past the token budget (as llama-server).
        share = self._n_batch // max(len(generating), 1) - 1
        requests: list[DraftRequest] = []
        for slot in generating:
            generation = slot.generation
            if generation is None or generation.next_token is None:
                continue  # not generating: excluded above already
            limit = min(share, self.n_ctx_seq - generation.n_past - 2)
            if generation.max_tokens is not None:
                limit = min(limit, generation.max_tokens - generation.generated - 1)
            requests.append(DraftRequest(slot.id, slot.tokens, generation.next_token, limit))
        for seq, draft in speculator.propose(requests).items():
            generation = self.slots[seq].generation
            if generation is not None:
                generation.draft = draft

    def _add(self, index: int, token: int, pos: int, seq: int, logits: bool) -> None:
        batch = self._batch
        batch.token[index] = token
        batch.pos[index] = pos
        batch.n_seq_id[index] = 1
        batch.seq_id[index][0] = seq
        batch.logits[index] = logits

    def _scales_this_step(self) -> AdapterScales:
        """The adapter scales of the next busy slot after the last step's: sets take turns."""
        busy = [slot for slot in self.slots if slot.generation is not None]
        if not busy:
            return ()
        chosen = next((slot for slot in busy if slot.id > self._turn), busy[0])
        self._turn = chosen.id
        assert chosen.generation is not None
        return chosen.generation.adapter_scales

    def _fill_batch(self, scales: AdapterScales) -> list[_Slot]:
        """One token per generating sequence first, then prompt chunks in the room left.

        Only sequences decoded with ``scales`` take part; the others wait for their turn.
        """
        n = 0
        active: list[_Slot] = []
        for slot in self.slots:
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
        for slot in self.slots:
            generation = slot.generation
            if generation is None or not generation.pending or n >= self._n_batch:
                continue
            if generation.adapter_scales != scales:
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
        """Sample the sequence's next token; with guesses, keep them while the sampler agrees.

        A kept guess is already in the KV cache, so the next position's logits are in the batch
        too; the first disagreement is the next token, and the guesses after it are dropped.
        """
        draft, generation.draft = generation.draft, []
        speculator = self._speculator
        for i in range(len(draft) + 1):
            token = llama_cpp.llama_sampler_sample(
                generation.sampler, self._ctx, generation.batch_index + i
            )
            kept = False
            if i < len(draft) and speculator is not None:
                kept = speculator.keeps(slot.id, i, draft[i], token)
                token = draft[i] if kept else token
            if not self._take(slot, generation, token, generation.batch_index + i):
                return  # finished: the next request in the slot drops the rest of the cache
            if not kept:
                break
            generation.next_token = None
            slot.tokens.append(token)
            generation.n_past += 1
            generation.draft_accepted += 1
            self.metrics.draft_accepted += 1
        if draft:
            llama_cpp.llama_memory_seq_rm(self._memory, slot.id, generation.n_past, -1)

    def _take(self, slot: _Slot, generation: Generation, token: int, index: int) -> bool:
        """Emit a token sampled from the logits at batch ``index``; False when it finished the
        generation."""
        if not generation.first_token:
            generation.first_token = time.perf_counter()
        if not generation.ignore_eos and llama_cpp.llama_vocab_is_eog(self._vocab, token):
            self._finish(slot, "stop")
            return False
        generation.generated += 1
        generation.next_token = token
        text = generation.stop.feed(generation.text.feed(token_piece(self._vocab, token)))
        if text:
            probs = None
            if generation.n_probs:
                probs = token_probs(
                    self._ctx,
                    self._vocab,
                    index,
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
        else:
            return True
        return False

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
        if generation.draft_n:  # as llama-server: only when something was guessed
            timings["draft_n"] = generation.draft_n
            timings["draft_n_accepted"] = generation.draft_accepted
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
