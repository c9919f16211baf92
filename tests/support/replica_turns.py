"""Two-turn conversations on a model with ``replicas = 2`` (docs/scaling.md, "Replicas"), over
real HTTP with the ``openai`` client: what a second turn finds in the KV cache tells whether it
went to the copy that answered the first.

Copy 0 is kept busy by a long stream while a conversation's first turn is sent, so the least
busy copy, copy 1, takes it; its second turn is sent once both copies are idle, when the least
busy rule alone would send it to copy 0, whose cache has only the chat template's opening.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from tests.support.chat_streams import generating, until
from tests.support.files.bundled_model import bundled_model
from tests.support.router_process import RouterProcess, running_router

__all__ = [
    "busy_first_copy",
    "copies",
    "opening",
    "two_copies",
    "two_turns",
    "used_router",
]


@contextmanager
def used_router(folder: Path, model: str, setting: str, context: str) -> Iterator[RouterProcess]:
    """A router whose model (the bundled one) has the preset line ``setting``, loaded by a
    first request."""
    preset = folder / "models.ini"
    preset.write_text(f"[{model}]\nmodel = {bundled_model()}\n{setting}\n")
    with running_router(["--models-preset", str(preset), "-c", context, "-np", "1"]) as process:
        body = {"model": model, "prompt": "Hi", "max_tokens": 1}
        assert process.client.post("/v1/completions", json=body).status_code == 200
        yield process


def opening(name: str) -> str:
    """A long, distinct first message: what a second turn finds cached is told from the
    template's opening, and it is past the prompt prefix that keeps a conversation on a copy."""
    return f"This is conversation {name}. " + " ".join(f"{name}{i} is a word." for i in range(60))


@contextmanager
def two_copies(folder: Path, model: str) -> Iterator[RouterProcess]:
    """A router whose model has ``replicas = 2``, both copies loaded."""
    with used_router(folder, model, "replicas = 2", "2048") as process:
        loaded = ["loaded"] * 2
        until(lambda: [c["status"] for c in copies(process, model)] == loaded, "both copies")
        yield process


def copies(router: RouterProcess, model: str) -> list[dict[str, Any]]:
    replicas: list[dict[str, Any]] = router.models()[model]["replicas"]
    return replicas


def busy_first_copy(
    router: RouterProcess, model: str, stack: ExitStack, tokens: int = 1000
) -> None:
    """A long stream of ``tokens`` that the least busy rule gives copy 0 (both idle: the
    first), running until ``stack`` closes."""
    body = {"model": model, "prompt": "Once", "max_tokens": tokens, "ignore_eos": True}
    generating(router, stack, body)
    assert [c["in_flight"] for c in copies(router, model)] == [1, 0]


def two_turns(router: RouterProcess, model: str, name: str, headers: dict[str, str]) -> float:
    """Two turns of conversation ``name``, the first while copy 0 is busy; the share of the
    first turn's prompt that the second found cached (a miss: the template's opening alone)."""
    messages: list[Any] = [{"role": "user", "content": opening(name)}]
    with openai.OpenAI(base_url=f"{router.url}/v1", api_key="none", max_retries=0) as client:

        def turn() -> ChatCompletion:
            return client.chat.completions.create(
                model=model, messages=messages, max_tokens=4, temperature=0, extra_headers=headers
            )

        with ExitStack() as busy:
            busy_first_copy(router, model, busy)
            first = turn()
        until(lambda: all(c["in_flight"] == 0 for c in copies(router, model)), "idle copies")
        messages += [
            {"role": "assistant", "content": first.choices[0].message.content or ""},
            {"role": "user", "content": "And then?"},
        ]
        second = turn()
    assert first.usage is not None
    assert second.usage is not None
    assert second.usage.prompt_tokens_details is not None
    cached = second.usage.prompt_tokens_details.cached_tokens or 0
    return cached / first.usage.prompt_tokens
