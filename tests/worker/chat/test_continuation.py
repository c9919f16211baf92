"""Continuing the conversation's last message (assistant prefill, ``continue_final_message``)
and the conversation ends llama-server refuses, against a real worker process."""

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
    with worker(models_dir / "alpha.gguf", "--ctx-size", "512", "--verbose") as process:
        yield process


def _chat(child: WorkerProcess, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    body = {"messages": messages, "max_tokens": 2, **extra}
    return httpx.post(f"{child.url}/v1/chat/completions", json=body, timeout=60)


def _as_detokenized(child: WorkerProcess, text: str) -> str:
    """``text`` as the answer's ``__verbose.prompt`` writes a prompt: tokenized with BOS, and
    back."""
    tokens = httpx.post(f"{child.url}/tokenize", json={"content": text, "add_special": True})
    back = httpx.post(f"{child.url}/detokenize", json={"tokens": tokens.json()["tokens"]})
    return str(back.json()["content"])


def _rendered(child: WorkerProcess, messages: list[dict[str, Any]]) -> str:
    answer = httpx.post(f"{child.url}/apply-template", json={"messages": messages})
    return str(answer.json()["prompt"])


@pytest.mark.parametrize(
    ("content", "continued"),
    [
        ("Once upon", "Once upon"),
        ([{"type": "text", "text": "On"}, {"type": "text", "text": "ce"}], "On\n\nce"),
    ],
)
def test_a_final_assistant_message_is_continued(
    child: WorkerProcess, content: Any, continued: str
) -> None:
    """The earlier messages with the generation prompt, then the message's text, no end of turn
    (parts joined by blank lines, as llama.cpp joins them)."""
    answer = _chat(child, [USER, {"role": "assistant", "content": content}])
    assert answer.status_code == 200
    expected = _rendered(child, [USER]) + continued
    assert answer.json()["__verbose"]["prompt"] == _as_detokenized(child, expected)


def test_continue_final_message_continues_when_no_new_turn_is_asked(child: WorkerProcess) -> None:
    explicit = _chat(child, [USER, REPLY], add_generation_prompt=False, continue_final_message=True)
    implicit = _chat(child, [USER, REPLY])
    assert explicit.json()["__verbose"]["prompt"] == implicit.json()["__verbose"]["prompt"]


def test_no_generation_prompt_when_asked(child: WorkerProcess) -> None:
    answer = _chat(child, [USER], add_generation_prompt=False)
    with_it = _chat(child, [USER])
    prompt = answer.json()["__verbose"]["prompt"]
    assert len(prompt) < len(with_it.json()["__verbose"]["prompt"])
    assert with_it.json()["__verbose"]["prompt"].startswith(prompt)


@pytest.mark.parametrize(
    ("messages", "extra", "message"),
    [
        ([USER, REPLY, REPLY], {}, "Cannot have 2 or more assistant messages at the end"),
        ([USER, REPLY], {"continue_final_message": True}, "Cannot set both add_generation_prompt"),
        (
            [
                USER,
                {
                    **REPLY,
                    "tool_calls": [
                        {
                            "id": "1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
            ],
            {"continue_final_message": True, "add_generation_prompt": False},
            "Cannot continue an assistant message that contains tool calls",
        ),
    ],
)
def test_conversation_ends_llama_server_refuses(
    child: WorkerProcess, messages: list[dict[str, Any]], extra: dict[str, Any], message: str
) -> None:
    response = _chat(child, messages, **extra)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith(message)


def test_without_prefill_assistant_the_last_reply_is_a_whole_turn(models_dir: Path) -> None:
    flags = ("--ctx-size", "512", "--verbose", "--no-prefill-assistant")
    with worker(models_dir / "alpha.gguf", *flags) as plain:
        answer = _chat(plain, [USER, REPLY])
        assert answer.status_code == 200
        # As llama-server's --no-prefill-assistant: rendered whole, a new turn after it.
        expected = _rendered(plain, [USER, REPLY])
        assert answer.json()["__verbose"]["prompt"] == _as_detokenized(plain, expected)
        # A request that asks still continues it.
        asked = _chat(
            plain, [USER, REPLY], add_generation_prompt=False, continue_final_message=True
        )
        assert asked.json()["__verbose"]["prompt"] == _as_detokenized(
            plain, _rendered(plain, [USER]) + "Once"
        )
