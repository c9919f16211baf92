"""A request handed a model whose worker is stopped before it takes the request is answered by
the model's next load, as a request a moment later would be (router/relay/worker_upstream.py).

A real router and worker. The worker is frozen (SIGSTOP), so a request sent to it stays unread
in its socket; then the model is unloaded, and with a stop timeout of 1 s the frozen worker is
killed without ever having read it.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import httpx
import psutil

from tests.support.chat_streams import active_requests, until
from tests.support.router_process import running_router

CHAT = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_request_the_stopped_worker_never_read_is_answered_by_the_next_load(
    models_dir: Path, tmp_path: Path
) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text("[alpha]\nstop-timeout = 1\n")
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    args += ["--models-spare", "0", "--stall-timeout", "600"]
    with running_router(args) as router:
        assert router.client.post("/v1/chat/completions", json=CHAT).status_code == 200
        (worker,) = psutil.Process(router.process.pid).children()
        os.kill(worker.pid, signal.SIGSTOP)

        answers: list[httpx.Response] = []

        def chat() -> None:
            with httpx.Client(base_url=router.url, timeout=120) as client:
                answers.append(client.post("/v1/chat/completions", json=CHAT))

        sender = threading.Thread(target=chat)
        sender.start()
        until(
            lambda: active_requests(router, "alpha") == 1, "the chat to be handed the frozen worker"
        )
        assert router.client.post("/models/unload", json={"model": "alpha"}).status_code == 200
        until(lambda: not _alive(worker), "the frozen worker to be killed")
        sender.join(timeout=120)

        (answer,) = answers
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["role"] == "assistant"
        assert router.models()["alpha"]["status"]["value"] == "loaded"  # loaded again for it
