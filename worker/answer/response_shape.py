"""How an API words a generation: the :class:`ResponseShape` base every API folder fills in.

A shape is built with everything it needs to know (an
:class:`~worker.answer.answer_context.AnswerContext`) and afterwards only sees the generation's
events; docs/architecture.md (Code map, ``answer/``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from corral.llama_build import llama_build_info
from worker.answer.answer_context import AnswerContext
from worker.answer.native_answer import native_final
from worker.engine.generation import Delta, Finished, Progress

__all__ = [
    "DONE",
    "ResponseShape",
    "openai_accounting",
    "sse",
    "with_progress",
    "with_timings",
]


DONE = b"data: [DONE]\n\n"  # how an OpenAI stream ends, after its last completion's events


def _usage(finished: Finished) -> dict[str, Any]:
    return {
        "prompt_tokens": finished.prompt_tokens,
        "completion_tokens": finished.predicted_tokens,
        "total_tokens": finished.prompt_tokens + finished.predicted_tokens,
        "prompt_tokens_details": {"cached_tokens": finished.cached_tokens},
    }


def sse(payload: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``event`` names it (Anthropic's and Responses' streams do)."""
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + msgspec.json.encode(payload) + b"\n\n"


def with_progress(chunk: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """A chunk reporting ``progress`` (llama-server's ``prompt_progress``), with the timings so
    far when they were asked for."""
    chunk["prompt_progress"] = {
        "total": progress.total,
        "cache": progress.cache,
        "processed": progress.processed,
        "time_ms": progress.time_ms,
    }
    if progress.timings is not None:
        chunk["timings"] = progress.timings
    return chunk


def with_timings(chunk: dict[str, Any], last: Delta | None) -> dict[str, Any]:
    """A streamed chunk with the timings so far, when the request asked (timings_per_token)."""
    if last is not None and last.timings is not None:
        chunk["timings"] = last.timings
    return chunk


def openai_accounting(finished: Finished) -> dict[str, Any]:
    """What every final answer carries: OpenAI's usage and llama-server's timings."""
    return {"usage": _usage(finished), "timings": finished.timings}


class ResponseShape:
    """How one route words its answer.

    Subclasses fill in :meth:`chunk`, :meth:`closing` and :meth:`whole` as JSON values; a route
    whose stream is not one ``data:`` event per value overrides the ``stream_*`` methods.
    """

    # OpenAI's system_fingerprint: llama-server's build info, ``b<build>-<commit>``.
    fingerprint = llama_build_info()
    done_marker = True  # OpenAI streams end with `data: [DONE]`; llama-server's own do not
    # How the API spells an answer's id: its prefix, then this many of the context's digits.
    id_prefix: ClassVar[str]
    id_digits: ClassVar[int] = 32

    def __init__(self, context: AnswerContext) -> None:
        self.context = context
        self.id = self.id_prefix + context.id[: self.id_digits]
        self.last: Delta | None = None  # the latest piece: its token, probabilities, timings

    def observe(self, delta: Delta) -> None:
        """Sees every piece before it is worded, streamed or not; a shape that reports tokens
        or their probabilities over the whole answer records them here too."""
        self.last = delta

    def opening(self) -> dict[str, Any] | None:
        return None

    def chunk(self, text: str) -> dict[str, Any] | None:
        """The event for a piece of text, or None to hold it until the end."""
        raise NotImplementedError

    def progress(self, progress: Progress) -> dict[str, Any] | None:
        """The event for how far the prompt has been read (``return_progress``), or None for
        an API that does not report it."""
        return None

    def closing(self, finished: Finished) -> dict[str, Any]:
        raise NotImplementedError

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        raise NotImplementedError

    def answer(self, text: str, finished: Finished) -> dict[str, Any]:
        """The whole answer, with llama-server's ``__verbose`` object when it was asked for."""
        body = self.whole(text, finished)
        if self.context.rendered is not None:
            body["__verbose"] = native_final(self.context, text, finished, [], "\n" in text)
        return body

    def stream_opening(self, cached: int) -> bytes:
        """The stream's first events; ``cached``: how many of the prompt's tokens the prompt
        cache held (Anthropic's stream opens with it)."""
        opening = self.opening()
        return sse(opening) if opening is not None else b""

    def stream_chunk(self, text: str) -> bytes:
        chunk = self.chunk(text)
        return sse(chunk) if chunk is not None else b""

    def stream_progress(self, progress: Progress) -> bytes:
        event = self.progress(progress)
        return sse(event) if event is not None else b""

    def stream_closing(self, finished: Finished) -> bytes:
        # Several completions share one stream: the pipeline ends it once, after them all.
        last = self.done_marker and self.context.choices == 1
        return sse(self.closing(finished)) + (DONE if last else b"")
