"""How an API words a generation: the :class:`ResponseShape` base every API folder fills in."""

from __future__ import annotations

import time
import uuid
from typing import Any

import msgspec

from corral.llama_build import llama_build_info
from worker.answer.native_answer import NativeAnswer, native_final
from worker.engine.generation import Delta, Finished, Progress

__all__ = [
    "ResponseShape",
    "openai_accounting",
    "sse",
    "with_progress",
    "with_timings",
]


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
    # Set by run_chat before generation starts: Anthropic's stream announces it in its first event,
    # long before the Finished event that carries the counts.
    prompt_tokens = 0
    # Set by the chat pipeline from ``stream_options``: the usage comes in a chunk of its own.
    include_usage = False

    def __init__(self, model: str, prefix: str) -> None:
        self.model = model
        self.id = f"{prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.index = 0  # which of the request's completions this one is (n, several prompts)
        self.verbose: NativeAnswer | None = None  # set: the whole answer carries __verbose
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
        if self.verbose is not None:
            new_line = "\n" in text
            body["__verbose"] = native_final(self.verbose, self.index, text, finished, [], new_line)
        return body

    def stream_opening(self) -> bytes:
        opening = self.opening()
        return sse(opening) if opening is not None else b""

    def stream_chunk(self, text: str) -> bytes:
        chunk = self.chunk(text)
        return sse(chunk) if chunk is not None else b""

    def stream_progress(self, progress: Progress) -> bytes:
        event = self.progress(progress)
        return sse(event) if event is not None else b""

    def stream_closing(self, finished: Finished) -> bytes:
        return sse(self.closing(finished)) + (b"data: [DONE]\n\n" if self.done_marker else b"")
