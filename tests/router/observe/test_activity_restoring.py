"""A request whose worker loads a saved KV cache for it shows ``restoring`` in ``GET /activity``
(docs/api.md), told by the worker's ``restore`` notes on the router↔worker wire (docs/protocol.md
§1), while its client's answer is the same as without them.

One router, one slot: a second conversation takes the slot, so the first one's cache becomes a
copy in memory (``--cache-ram``), which its next turn loads back. A restore of the tiny model
takes a moment, so the test reads when the worker said it began and ended (``restore_started``,
``restore_ended``) rather than racing a poll.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.router_process import RouterProcess, running_router

_WORDS = "once upon a time there was a little model that said hello to the world and then "
_FIRST = [{"role": "user", "content": ("story " + _WORDS) * 6}]
_OTHER = [{"role": "user", "content": ("water " + _WORDS) * 6}]


@pytest.fixture(scope="module")
def router(models_dir: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(models_dir), "--ctx-size", "1024", "--parallel", "1"]
    with running_router(args) as process:
        yield process


def _chat(router: RouterProcess, messages: list[dict[str, str]], stream: bool) -> httpx.Response:
    body = {"model": "alpha", "messages": messages, "max_tokens": 4, "temperature": 0}
    # A client's own request id is not the router's: dropped, or the notes would name r1.
    answer = router.client.post(
        "/v1/chat/completions",
        json={**body, "stream": stream},
        headers={"x-corral-request-id": "r1"},
    )
    assert answer.status_code == 200, answer.text
    return answer


def _next_turn(router: RouterProcess, stream: bool) -> tuple[httpx.Response, dict[str, Any]]:
    """The first conversation's next turn, after the other one took the slot from it: its
    answer and its activity record."""
    first = _chat(router, _FIRST, stream=False).json()["choices"][0]["message"]["content"]
    _chat(router, _OTHER, stream=False)  # the slot's cache becomes a copy in memory
    turn = [*_FIRST, {"role": "assistant", "content": first}, {"role": "user", "content": "hi"}]
    answer = _chat(router, turn, stream)
    # A stream's client can read [DONE] before the router closes its record: read the
    # activity until that record is over (it is the newest, first in the list).
    for _ in range(200):
        record = router.client.get("/activity").json()["requests"][0]
        if record["state"] in ("done", "failed"):
            break
        time.sleep(0.05)
    return answer, record


def test_a_streamed_turn_shows_restoring_then_ends_with_its_cached_tokens(
    router: RouterProcess,
) -> None:
    answer, record = _next_turn(router, stream=True)
    assert record["stream"] is True
    assert record["state"] == "done"
    # The worker loaded the copy after the hand-over, before the first token.
    assert record["dispatched"] <= record["restore_started"] <= record["restore_ended"]
    assert record["restore_ended"] <= record["first_token"]
    assert record["restored_tokens"] > 0
    assert record["cached_tokens"] >= record["restored_tokens"]
    # The client's stream has only its events: nothing of the notes.
    lines = answer.text.split("\n")
    events = [line for line in lines if line]
    assert all(line.startswith("data: ") for line in events), events
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in events[:-1]]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)


def test_a_whole_answer_shows_restoring_too(router: RouterProcess) -> None:
    answer, record = _next_turn(router, stream=False)
    assert record["stream"] is False
    assert record["dispatched"] <= record["restore_started"] <= record["restore_ended"]
    assert record["restored_tokens"] == answer.json()["timings"]["restored_n"]
