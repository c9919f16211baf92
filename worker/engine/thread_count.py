"""The threads the model's context computes with, as the router last asked (engine thread only).

The router shares the CPU cores among the models busy at once (docs/serving.md, "CPU threads";
docs/protocol.md §1, the threads command): ggml's threads work in lock-step, so two workers
each running as many threads as there are cores fight over them. The command arrives on the
lifeline's thread at any moment; the engine applies it between two steps, never inside a
decode (``llama_set_n_threads`` while llama.cpp runs a batch's ubatches would race it). The main
context and the embeddings context follow it (a batch key's embeddings are as busy as a chat);
the draft model's keeps the count the worker started with. A context made anew (a wake from
sleep, the embeddings context on first use) gets the count too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.children.protocol import ThreadsCommand
from worker.host.llama_bindings import llama_cpp

if TYPE_CHECKING:
    from worker.engine.model import LoadedModel

__all__ = ["ThreadCount", "threads_now"]


class ThreadCount:
    def __init__(self) -> None:
        self._wanted: ThreadsCommand | None = None  # set by any thread: one reference, atomic
        # What was given, to which contexts: the main one and the embeddings' (None: not made).
        self._applied: tuple[ThreadsCommand | None, Any, Any] = (None, None, None)

    def want(self, command: ThreadsCommand) -> None:
        """The router's count, for the next step (any thread)."""
        self._wanted = command

    def apply(self, model: LoadedModel) -> None:
        """Give the context the count asked for, if it does not have it yet (engine thread,
        between two steps); a sleeping model has no context, and gets it once awake."""
        wanted = self._wanted
        if wanted is None or model.sleeping:
            return
        now = (wanted, model.ctx, model.embeddings)
        if all(a is b for a, b in zip(now, self._applied, strict=True)):
            return
        llama_cpp.llama_set_n_threads(model.ctx, wanted.threads, wanted.threads_batch)
        if model.embeddings is not None:
            model.embeddings.set_threads(wanted.threads, wanted.threads_batch)
        self._applied = now


def threads_now(model: LoadedModel) -> tuple[int, int] | None:
    """What the context computes with now, as llama.cpp reads it back (generating, reading
    prompts); while the model sleeps (its context freed), what it had as it fell asleep, so a
    sleeping worker's ``/metrics`` stays the same text (llama.cpp's test_sleep.py). Engine
    thread only."""
    if model.sleeping:
        return model.threads_asleep
    return llama_cpp.llama_n_threads(model.ctx), llama_cpp.llama_n_threads_batch(model.ctx)
