"""``GET /activity`` and ``/activity/sse`` over real HTTP (docs/api.md): an admin sees every
request, an inference key only its own; the access line and the activity view tell the same
record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import openai
import pytest

from router.security.api_keys import key_id
from tests.support.keyed_router import bearer, keyed_router
from tests.support.router_process import RouterProcess

ADMIN, MINE, THEIRS = "admin-key-0001", "inference-key-mine", "inference-key-theirs"
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"  # W3C's example


def _chat(router: RouterProcess, key: str, *, stream: bool = False) -> None:
    with openai.OpenAI(base_url=f"{router.url}/v1", api_key=key, max_retries=0) as client:
        answer = client.chat.completions.create(
            model="alpha",
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=4,
            stream=stream,
            extra_headers={"traceparent": TRACE},
        )
        if stream:
            for _ in answer:
                pass


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    keys = [f"{ADMIN} admin", f"{MINE} inference", f"{THEIRS} inference"]
    with keyed_router(models_dir, tmp_path_factory.mktemp("keys"), keys, admin=ADMIN) as router:
        _chat(router, ADMIN)
        _chat(router, MINE, stream=True)
        _chat(router, THEIRS)
        yield router


def _activity(router: RouterProcess, key: str) -> dict[str, Any]:
    answer = httpx.get(f"{router.url}/activity", headers=bearer(key), timeout=30)
    assert answer.status_code == 200, answer.text
    snapshot: dict[str, Any] = answer.json()
    return snapshot


def test_an_admin_sees_every_request_with_its_key_and_phases(team: RouterProcess) -> None:
    records = _activity(team, ADMIN)["requests"]
    assert sorted(r["key_id"] for r in records) == sorted(key_id(k) for k in (ADMIN, MINE, THEIRS))
    for record in records:
        assert record["model"] == "alpha"
        assert record["state"] == "done"
        assert record["status"] == 200
        assert record["klass"] == "interactive"
        assert record["received"] <= record["dispatched"] <= record["ended"]
        assert record["completion_tokens"] > 0
    first = min(records, key=lambda r: r["received"])
    assert first["load_started"] is not None  # the first waited for alpha's load
    streamed = next(r for r in records if r["key_id"] == key_id(MINE))
    assert streamed["stream"] is True
    assert streamed["dispatched"] <= streamed["first_token"] <= streamed["ended"]
    assert streamed["trace_parent"] == TRACE


def test_an_inference_key_sees_only_its_own_requests(team: RouterProcess) -> None:
    for key in (MINE, THEIRS):
        snapshot = _activity(team, key)
        assert [r["key_id"] for r in snapshot["requests"]] == [key_id(key)]
        assert [e["kind"] for e in snapshot["events"]][:2] == ["load", "loaded"]


def test_the_stream_applies_the_same_rule(team: RouterProcess) -> None:
    with httpx.stream(
        "GET", f"{team.url}/activity/sse", headers=bearer(MINE), timeout=30
    ) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        data = next(line for line in answer.iter_lines() if line.startswith("data:"))
    snapshot = msgspec.json.decode(data[5:])
    assert [r["key_id"] for r in snapshot["requests"]] == [key_id(MINE)]
    assert snapshot["samples"] is not None  # the first event carries the hour's samples


def test_without_a_key_there_is_no_activity(team: RouterProcess) -> None:
    assert httpx.get(f"{team.url}/activity", timeout=30).status_code == 401


def test_the_access_line_and_the_view_tell_one_record(team: RouterProcess) -> None:
    lines = [
        line
        for line in (msgspec.json.decode(t) for t in team.log_text().splitlines() if t[:1] == "{")
        if line.get("logger") == "corral.access" and line.get("path") == "/v1/chat/completions"
    ]
    records = sorted(_activity(team, ADMIN)["requests"], key=lambda r: r["ended"])
    assert [line["generated_tokens"] for line in lines] == [r["completion_tokens"] for r in records]
    assert [line["prompt_tokens"] for line in lines] == [r["prompt_tokens"] for r in records]
