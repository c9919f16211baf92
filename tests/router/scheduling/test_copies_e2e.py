"""A model with ``replicas = 2`` on one box (docs/scaling.md, "Replicas"), over real HTTP with
the ``openai`` client and real inference: both copies load, a request goes to the least busy
copy, and a conversation (its ``X-Conversation-Id``, else its long prompt prefix) stays on the
copy that holds its KV cache, so its second turn reads most of its prompt from that cache.

Copy 0 is kept busy by a long stream while a conversation's first turn is sent: the least busy
copy, copy 1, takes it. Its second turn is sent once both copies are idle, when the least busy
rule alone would send it to copy 0, whose cache has only the chat template's opening.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from contextlib import ExitStack
from typing import Any, cast

import openai
import pytest
from openai.types.chat import ChatCompletion

from tests.support.chat_streams import until
from tests.support.corral_cli import corral
from tests.support.files.bundled_model import bundled_model
from tests.support.router_process import RouterProcess, running_router

MODEL = "smol"
# Long and distinct openings: what a second turn finds cached is told from the template's.
OPENINGS = {
    name: f"This is conversation {name}. " + " ".join(f"{name}{i} is a word." for i in range(60))
    for name in ("bee", "cat", "dog")
}


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    preset = tmp_path_factory.mktemp("copies") / "models.ini"
    preset.write_text(f"[{MODEL}]\nmodel = {bundled_model()}\nreplicas = 2\n")
    with running_router(["--models-preset", str(preset), "-c", "2048", "-np", "1"]) as process:
        yield process


def _copies(router: RouterProcess) -> list[dict[str, Any]]:
    replicas: list[dict[str, Any]] = router.models()[MODEL]["replicas"]
    return replicas


def _turns(router: RouterProcess, name: str, headers: dict[str, str], busy: ExitStack) -> float:
    """Two turns of conversation ``name``, the first while ``busy`` holds copy 0; the share of
    the first turn's prompt the second found cached (a miss: the template's opening alone)."""
    messages: list[Any] = [{"role": "user", "content": OPENINGS[name]}]
    with openai.OpenAI(base_url=f"{router.url}/v1", api_key="none", max_retries=0) as client:

        def turn() -> ChatCompletion:
            return client.chat.completions.create(
                model=MODEL, messages=messages, max_tokens=4, temperature=0, extra_headers=headers
            )

        _stream_on_copy_0(router, busy)
        first = turn()
        busy.close()
        until(lambda: all(c["in_flight"] == 0 for c in _copies(router)), "idle copies")
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


def _stream_on_copy_0(router: RouterProcess, stack: ExitStack) -> None:
    """A long stream that the least busy rule gives copy 0 (both idle: the first), running
    until ``stack`` closes."""
    body = {"model": MODEL, "prompt": "Once", "max_tokens": 1000, "ignore_eos": True}
    reply = stack.enter_context(
        router.client.stream("POST", "/v1/completions", json={**body, "stream": True})
    )
    assert reply.status_code == 200
    lines = cast("Generator[str, None, None]", reply.iter_lines())
    stack.callback(lines.close)
    while not next(lines).startswith("data:"):
        pass
    assert [c["in_flight"] for c in _copies(router)] == [1, 0]


@pytest.fixture(scope="module")
def loaded(router: RouterProcess) -> RouterProcess:
    body = {"model": MODEL, "prompt": "Hi", "max_tokens": 1}
    assert router.client.post("/v1/completions", json=body).status_code == 200
    until(lambda: [c["status"] for c in _copies(router)] == ["loaded"] * 2, "both copies loaded")
    return router


def test_both_copies_load_and_are_listed(loaded: RouterProcess) -> None:
    entry = loaded.models()[MODEL]
    assert entry["status"]["value"] == "loaded"
    assert [c["copy"] for c in entry["replicas"]] == [0, 1]
    assert "replicas = 2" in entry["status"]["preset"]


def test_a_conversation_id_keeps_its_second_turn_on_its_copy(loaded: RouterProcess) -> None:
    with ExitStack() as busy:
        assert _turns(loaded, "bee", {"X-Conversation-Id": "bee"}, busy) > 0.9


def test_a_long_prompt_prefix_keeps_its_second_turn_on_its_copy(loaded: RouterProcess) -> None:
    with ExitStack() as busy:
        assert _turns(loaded, "cat", {}, busy) > 0.9


def test_ps_counts_the_copies(loaded: RouterProcess) -> None:
    ps = corral("ps", "--url", loaded.url)
    assert ps.returncode == 0, ps.stderr
    assert f"{MODEL} (2 copies)" in ps.stdout
