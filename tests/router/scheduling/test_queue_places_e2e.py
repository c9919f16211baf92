"""Fair queue places over real HTTP (docs/serving.md, "Scheduling"; docs/security.md, "Key
holders"): one caller's resumable sessions, whose clients leave at once, no longer take every
place in ``--max-queue`` from another key, or, on a router without keys, a web page's from the
user's own tools; a caller's burst within its share is still served.

``LLAMA_SERVER_DEBUG_FAKE_TIMING`` holds each request 2 s on its one slot, so the queue is
there to be seen without racing a tiny model's answer. Each attacker's request is sent on a
socket of its own, closed as soon as the router has it: no connection is held for it.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from router.security.api_keys import key_id
from tests.support.chat_streams import CHAT, active_requests, queue_depth, until
from tests.support.keyed_router import bearer
from tests.support.router_process import RouterProcess, running_router

ATTACKER, VICTIM = "places-attacker-0001", "places-victim-0002"
ADMIN = "places-admin-0003"  # reads /activity and /metrics
PAGE = {"Origin": "https://attacker.example"}
_ARGS = ("--ctx-size", "256", "--parallel", "1", "--max-queue", "4")  # a share of 1 each
_ENV = {"LLAMA_SERVER_DEBUG_FAKE_TIMING": "1"}

Record = dict[str, Any]


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    keys = tmp_path_factory.mktemp("places") / "keys.txt"
    keys.write_text(f"{ATTACKER} inference\n{VICTIM} inference\n{ADMIN} admin\n")
    args = ["--models-dir", str(models_dir), *_ARGS, "--api-key-file", str(keys)]
    with running_router(args, _ENV) as router:
        router.client.headers.update(bearer(ADMIN))
        yield router


@pytest.fixture(scope="module")
def open_router(models_dir: Path) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(models_dir), *_ARGS], _ENV) as router:
        yield router


def _chat(router: RouterProcess, headers: dict[str, str], **extra: Any) -> httpx.Response:
    body = {"model": "alpha", "messages": CHAT, "max_tokens": 1, **extra}
    return router.client.post("/v1/chat/completions", json=body, headers=headers)


def _records(router: RouterProcess, key: str | None) -> list[Record]:
    records: list[Record] = router.client.get("/activity").json()["requests"]
    return [r for r in records if r["key_id"] == key and r["route"] == "/v1/chat/completions"]


def _quiet(router: RouterProcess) -> None:
    """Alpha is loaded and nothing is in flight: the queue is for its slot alone."""
    if router.models()["alpha"]["status"]["value"] != "loaded":
        assert _chat(router, {}).status_code == 200
    until(lambda: queue_depth(router) + active_requests(router, "alpha") == 0, "a quiet router")


def _settled(router: RouterProcess, key: str | None, count: int) -> Callable[[], bool]:
    """The caller's ``count`` requests have all arrived, and each is either answered or still
    in the scheduler's hands (waiting, or holding the slot)."""

    def settled() -> bool:
        records = _records(router, key)
        open_ = sum(r["status"] is None for r in records)
        live = queue_depth(router) + active_requests(router, "alpha")
        return len(records) == count and open_ == live

    return settled


def _sessions_and_leave(router: RouterProcess, headers: dict[str, str], key: str | None) -> None:
    """Six resumable sessions (``X-Conversation-Id``), each socket closed once the router has
    the request: they keep their places and generate for nobody (docs/protocol.md §5)."""
    url = urlsplit(router.url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    before = len(_records(router, key))
    for n in range(6):
        body = json.dumps({"model": "alpha", "messages": CHAT, "max_tokens": 64}).encode()
        lines = [
            "POST /v1/chat/completions HTTP/1.1",
            f"Host: {host}:{port}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            f"X-Conversation-Id: places-{n}-{threading.get_ident()}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        with socket.create_connection((host, port)) as sock:
            sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
            until(_settled(router, key, before + n + 1), f"session {n} to be handled")


def _rejections(router: RouterProcess) -> int:
    metrics = router.client.get("/metrics").text.splitlines()
    return int(float(next(line.split()[1] for line in metrics if line.startswith(
        "corral_queue_rejections_total"))))  # fmt: skip


def test_one_keys_detached_sessions_leave_another_key_its_place(team: RouterProcess) -> None:
    _quiet(team)
    refused_before = _rejections(team)
    _sessions_and_leave(team, bearer(ATTACKER), key_id(ATTACKER))
    with ThreadPoolExecutor(1) as pool:
        victim = pool.submit(_chat, team, bearer(VICTIM))
        # The attacker's next request is told the real reason: the wait is for a slot.
        refused = _chat(team, bearer(ATTACKER))
        assert victim.result().status_code == 200  # another key still gets its place
    assert refused.status_code == 503
    assert refused.headers["Retry-After"] == "1"
    assert refused.json()["error"]["message"] == (
        "too many requests are waiting for a slot; this caller already holds 1 of them, "
        "try again later"
    )
    # Of the six, one held the slot and one waited (the key's share of 4); four were refused.
    assert _rejections(team) - refused_before == 5


def test_a_keys_burst_within_its_share_is_all_served(team: RouterProcess) -> None:
    _quiet(team)
    answers: list[int] = []
    session = {**bearer(VICTIM), "X-Conversation-Id": "places-burst"}
    burst = [
        threading.Thread(target=lambda h=h: answers.append(_chat(team, h).status_code))
        for h in (bearer(VICTIM), session)  # one takes the slot, one waits: its share
    ]
    for thread in burst:
        thread.start()
    for thread in burst:
        thread.join(timeout=60)
    assert answers == [200, 200]


def test_a_web_page_leaves_the_user_their_place_on_a_router_without_keys(
    open_router: RouterProcess,
) -> None:
    _quiet(open_router)
    refused_before = _rejections(open_router)
    _sessions_and_leave(open_router, PAGE, None)
    assert _chat(open_router, {}).status_code == 200  # the user's own tools send no Origin
    assert _rejections(open_router) - refused_before == 4  # the pages' share is 1 waiting
