"""The chat pipeline's checks on a conversation's end, as llama-server makes them, against a
real worker process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.worker_process import WorkerProcess, worker

USER = {"role": "user", "content": "hello"}
REPLY = {"role": "assistant", "content": "Once"}


@pytest.fixture(scope="module")
def child(models_dir: Path) -> Iterator[WorkerProcess]:
    with worker(models_dir / "alpha.gguf", "--ctx-size", "512") as process:
        yield process


def _chat(child: WorkerProcess, messages: list[dict[str, str]], **extra: Any) -> httpx.Response:
    body = {"messages": messages, "max_tokens": 2, **extra}
    return httpx.post(f"{child.url}/v1/chat/completions", json=body, timeout=60)


@pytest.mark.parametrize(
    ("messages", "extra", "message"),
    [
        ([USER, REPLY, REPLY], {}, "Cannot have 2 or more assistant messages at the end"),
        ([USER, REPLY], {"continue_final_message": True}, "Cannot set both add_generation_prompt"),
        (
            [USER, REPLY],
            {"continue_final_message": "content", "add_generation_prompt": True},
            "Cannot set both add_generation_prompt",
        ),
    ],
)
def test_conversation_ends_llama_server_refuses(
    child: WorkerProcess, messages: list[dict[str, str]], extra: dict[str, Any], message: str
) -> None:
    response = _chat(child, messages, **extra)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith(message)


def test_one_final_assistant_message_is_answered(child: WorkerProcess) -> None:
    assert _chat(child, [USER, REPLY]).status_code == 200
    assert _chat(child, [USER, REPLY, USER, REPLY]).status_code == 200
