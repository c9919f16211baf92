"""One request's generation as the batching engine runs it, and the events it emits.

:class:`Generation` carries a request's prompt and settings in and its progress while
:class:`~worker.engine.batching.BatchEngine` runs it (docs/protocol.md §6); ``emit`` receives a
:class:`Delta` per piece of text, then one :class:`Finished` or :class:`Failed`; with
``return_progress``, a :class:`Progress` as the prompt starts and after each batch of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from worker.engine.lora_adapters import AdapterScales
from worker.media.projector import MediaPrompt
from worker.sampling.chain import Sampler
from worker.sampling.grammar_sampler import GrammarSampler
from worker.sampling.params import SamplingParams
from worker.sampling.text import IndentLimit, StopMatcher, TextAssembler
from worker.sampling.token_probs import TokenProbs

__all__ = [
    "Delta",
    "EngineMetrics",
    "Failed",
    "Finished",
    "Generation",
    "GenerationEvent",
    "Progress",
]


class Delta(NamedTuple):
    text: str
    token: int
    probs: TokenProbs | None = None  # with the request's n_probs
    timings: dict[str, float] | None = None  # with the request's timings_per_token


class Progress(NamedTuple):
    """llama-server's ``prompt_progress``: prompt tokens in all, reused from the cache, and in
    the KV cache so far (the reused ones included)."""

    total: int
    cache: int
    processed: int
    time_ms: int
    timings: dict[str, float] | None = None  # with timings_per_token: the prompt's so far


class Finished(NamedTuple):
    reason: str  # "stop" (end of generation or a stop string) or "length"
    stop_word: str | None
    prompt_tokens: int
    cached_tokens: int
    predicted_tokens: int
    timings: dict[str, float]
    truncated: bool = False  # the context filled up: shifted (--context-shift) or stopped
    id_slot: int = 0  # the slot that ran it
    length: int = -1  # a whole answer's text ends here (n_indent cut its last line); -1: all


class Failed(NamedTuple):
    message: str


GenerationEvent = Delta | Progress | Finished | Failed


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
    # Whose cached prompts it may reuse: only those of its own scope (worker/host/cache_scope.py).
    cache_scope: str = ""
    n_cache_reuse: int = 0  # reuse cached chunks this long from further on, shifted into place
    id_slot: int = -1  # the slot to run on (llama-server's id_slot); -1: the best free one
    lora: dict[int, float] | None = None  # the request's adapter scales; None: the global ones
    context_shift: bool = False  # a full context drops old tokens instead of ending
    n_keep: int = 0  # prompt tokens a shift keeps (after BOS); -1: the whole prompt
    truncated: bool = False
    n_probs: int = 0  # report the sampled token's and the top n tokens' probabilities
    # llama-server's t_max_predict_ms: once generating for longer, stop at the next new line.
    max_predict_ms: int = 0
    n_indent: int = 0  # llama-server's n_indent: a less indented line ends the generation
    length: int = -1  # where a whole answer's text ends (IndentLimit cut it); -1: all of it
    post_sampling_probs: bool = False
    return_progress: bool = False  # streamed: a Progress event per prompt batch
    timings_per_token: bool = False  # every Delta carries the timings so far
    cancelled: bool = False  # set from the event loop; read here once per step
    media: MediaPrompt | None = None  # a prompt with images or audio; ``prompt`` counts them
    # Progress, owned by the engine thread.
    n_past: int = 0
    pending: list[int] = field(default_factory=list)
    generated: int = 0
    cached: int = 0
    restored: int = 0  # of ``cached``, tokens a saved cache gave back (memory or disk tier)
    next_token: int | None = None  # sampled, not yet decoded
    adapter_scales: AdapterScales = ()  # fixed on submit
    grammar: GrammarSampler | None = None  # parsed on submit, handed to the sampler on admit
    sampler: Sampler | None = None
    batch_index: int = -1
    draft: list[int] = field(default_factory=list)  # guesses decoded after next_token
    # Media positions hold no token a draft model or an n-gram could read (MEDIA_TOKEN).
    draftable: bool = True
    draft_n: int = 0  # guesses verified, and how many of them were kept
    draft_accepted: int = 0
    started: float = 0.0
    first_token: float = 0.0
    # (done, tokens): tells the router a saved KV cache is being loaded for it, then was
    # (worker/host/restore_notes.py); None when no router asked.
    notify_restore: Callable[[bool, int], None] | None = None
    restoring: bool = False

    def __post_init__(self) -> None:
        self.text = TextAssembler()
        self.stop = StopMatcher(self.stops)
        self.indent = IndentLimit(self.n_indent)

    def evaluate_media(self, ctx: Any, seq: int, n_batch: int) -> None:
        """Run the media prompt into sequence ``seq`` now, in libmtmd's own decodes; its first
        token is to be sampled from the last logits. RuntimeError when libmtmd fails."""
        media, self.media = self.media, None
        assert media is not None
        self.draftable = False
        # Media embeddings sit at positions a shift cannot move (M-RoPE counts image rows): a
        # full context ends the generation, as llama-server turns context shift off with an mmproj.
        self.context_shift = False
        self.n_past = media.evaluate(ctx, seq, n_batch)
        self.pending = []
        self.batch_index = -1  # the last logits

    def delta(self, text: str, token: int, probs: TokenProbs | None = None) -> Delta:
        """The event for a piece of text, with the timings so far when they were asked for."""
        timings = self.timings(time.perf_counter()) if self.timings_per_token else None
        return Delta(text, token, probs, timings)

    def restore_began(self) -> None:
        """A saved KV cache is about to be loaded for it: the router hears of it at once."""
        if self.notify_restore is not None and not self.restoring:
            self.restoring = True
            self.notify_restore(False, 0)

    def restore_ended(self) -> None:
        """Its prompt's start is ready: a restore that began has ended (``restored`` tokens)."""
        if self.restoring and self.notify_restore is not None:
            self.restoring = False
            self.notify_restore(True, self.restored)

    def report_progress(self) -> None:
        """Emit where the prompt stands, while it is being read and the client asked to know
        (``return_progress``); as llama-server, once as it starts and after each batch."""
        if self.return_progress and not self.first_token:
            now = time.perf_counter()
            timings = self.timings(now) if self.timings_per_token else None
            elapsed_ms = int((now - self.started) * 1000)
            self.emit(Progress(len(self.prompt), self.cached, self.n_past, elapsed_ms, timings))

    def finished(self, reason: str, timings: dict[str, float], id_slot: int) -> Finished:
        """The last event, ended for ``reason`` on slot ``id_slot``, with :meth:`timings`."""
        return Finished(
            reason,
            self.stop.matched,
            len(self.prompt),
            self.cached,
            self.generated,
            timings,
            self.truncated,
            id_slot,
            self.length,
        )

    def timings(self, now: float) -> dict[str, float]:
        """llama-server's ``timings`` for a generation at ``now`` (finished, or not)."""
        first = self.first_token or now
        prompt_n = len(self.prompt) - self.cached
        prompt_ms = (first - self.started) * 1000
        if not self.first_token:  # still reading the prompt: what has been read so far
            prompt_n = self.n_past - self.cached
            prompt_ms = prompt_ms if prompt_n else 0.0
        predicted_ms = (now - first) * 1000
        # The first token comes with the prompt's last batch: the rate is over the decode steps
        # after it, as llama-server's (server-common.h, n_gen_steps).
        steps = max(self.generated - 1, 0)
        timings = {
            "cache_n": self.cached,
            "prompt_n": prompt_n,
            "prompt_ms": prompt_ms,
            "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else 0.0,
            "prompt_per_second": prompt_n * 1000 / prompt_ms if prompt_ms else 0.0,
            "predicted_n": self.generated,
            "predicted_ms": predicted_ms,
            "predicted_per_token_ms": predicted_ms / steps if steps else 0.0,
            "predicted_per_second": steps * 1000 / predicted_ms if predicted_ms else 0.0,
        }
        if self.restored:  # Corral's own: the activity view and the traces show a restore
            timings["restored_n"] = self.restored
        if self.draft_n:  # as llama-server: only when something was guessed
            timings["draft_n"] = self.draft_n
            timings["draft_n_accepted"] = self.draft_accepted
        return timings


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

    def count_finished(self, generation: Generation, timings: dict[str, float]) -> None:
        """Add a finished generation, with its :meth:`Generation.timings`."""
        self.prompt_tokens += len(generation.prompt) - generation.cached
        self.prompt_tokens_cached += generation.cached
        self.prompt_seconds += timings["prompt_ms"] / 1000
        self.tokens_predicted += generation.generated
        self.tokens_predicted_seconds += timings["predicted_ms"] / 1000
        self.n_tokens_max = max(self.n_tokens_max, generation.n_past)
