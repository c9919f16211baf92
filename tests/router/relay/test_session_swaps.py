"""Chats shaped as the Web UI sends them (streamed, with ``X-Conversation-Id``) while their model
stops: each gets what the same chat without the header gets (docs/protocol.md §5).

A real router, real workers, real HTTP. To hold a model stopping for as long as a test needs,
without timing: another user's long answer keeps its worker draining until the test closes it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest

from tests.support.chat_streams import long_answer, stream_body, wait_queued
from tests.support.router_process import RouterProcess, running_router

# Long enough for the worker to drain the long answer until the test closes it.
PRESET = "[alpha]\nstop-timeout = 120\n"
STOPPED = "Stream not found: model '{}' stopped"


def _chat(url: str, model: str, conversation: str | None) -> tuple[int, bytes]:
    headers = {"X-Conversation-Id": conversation} if conversation else {}
    with (
        httpx.Client(base_url=url, timeout=120) as client,
        client.stream(
            "POST", "/v1/chat/completions", json=stream_body(model, 4), headers=headers
        ) as answer,
    ):
        return answer.status_code, b"".join(answer.iter_raw())


class _Chats:
    """A plain chat and a session chat for one model, sent together on their own threads."""

    def __init__(self, router: RouterProcess, model: str, conversation: str) -> None:
        self.answers: dict[str | None, tuple[int, bytes]] = {}
        self._threads = [
            threading.Thread(target=self._send, args=(router.url, model, conv))
            for conv in (None, conversation)
        ]
        for thread in self._threads:
            thread.start()

    def _send(self, url: str, model: str, conversation: str | None) -> None:
        self.answers[conversation] = _chat(url, model, conversation)

    def join(self) -> dict[str | None, tuple[int, bytes]]:
        for thread in self._threads:
            thread.join(timeout=180)
        return self.answers


def _unload(router: RouterProcess, preset: Path) -> None:
    assert router.client.post("/models/unload", json={"model": "alpha"}).status_code == 200


def _unload_and_reload(router: RouterProcess, preset: Path) -> None:
    """Unloaded, then its settings change: the reload stops it too, and gives it a new state."""
    _unload(router, preset)
    preset.write_text(PRESET + "ctx-size = 16384\n")

    def reload() -> None:  # answers once alpha has exited
        router.client.get("/models", params={"reload": "1"})

    threading.Thread(target=reload, daemon=True).start()


def _freeze(router: RouterProcess, preset: Path) -> None:
    """The worker hangs: the stall watchdog kills it, and the model loads again."""
    children = psutil.Process(router.process.pid).children()
    worker = next(child for child in children if "worker" in child.cmdline())
    os.kill(worker.pid, signal.SIGSTOP)
    router.wait_for_log("killing a worker that stopped making progress", model="alpha")


STOPS: dict[str, Callable[[RouterProcess, Path], None]] = {
    "unload": _unload,
    "reload": _unload_and_reload,
    "watchdog": _freeze,
}


@pytest.mark.parametrize("stop", sorted(STOPS))
def test_a_session_chat_sent_while_its_model_stops_is_answered_and_replayable(
    models_dir: Path, tmp_path: Path, stop: str
) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(PRESET)
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    args += ["--ctx-size", "32768", "--stall-timeout", "2"]
    conv = f"chat-{stop}::alpha"
    with running_router(args) as router:
        with long_answer(router, "alpha"):  # another user's answer: alpha drains it as it stops
            STOPS[stop](router, preset)
            chats = _Chats(router, "alpha", conv)
            if stop != "watchdog":  # a frozen worker may exit before the chats queue
                wait_queued(router, 2)
        answers = chats.join()

        plain, session = answers[None], answers[conv]
        assert plain[0] == 200, plain[1]
        assert session[0] == 200, session[1]
        assert session[1].endswith(b"data: [DONE]\n\n")
        replay = router.client.get("/v1/stream", params={"conv_id": conv, "from": 0})
        assert replay.status_code == 200, replay.text
        assert replay.content == session[1]


def test_session_chats_swapping_two_models_on_one_slot_all_succeed(models_dir: Path) -> None:
    args = ["--models-dir", str(models_dir), "--ctx-size", "128", "--models-max", "1"]
    with running_router(args) as router:

        def ask(index: int) -> int:
            model = ("alpha", "beta")[index % 2]
            # Every other chat of each model as the Web UI sends it, the rest plain.
            conversation = f"chat-{index}::{model}" if index % 4 < 2 else None
            return _chat(router.url, model, conversation)[0]

        with ThreadPoolExecutor(max_workers=6) as pool:
            statuses = list(pool.map(ask, range(48)))
        assert statuses == [200] * 48

        # A session is replayed if its worker still runs, else it is gone for a reason given.
        for index in range(0, 48, 4):
            conv = f"chat-{index}::alpha"
            replay = router.client.get("/v1/stream", params={"conv_id": conv, "from": 0})
            if replay.status_code != 200:
                assert replay.status_code == 404
                assert replay.json()["error"]["message"] == STOPPED.format("alpha")
