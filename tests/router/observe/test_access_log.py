"""One access line per request: JSON through a pipe, readable text on a terminal (a pty)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from router.observe.access_log import tokens_from_answer
from router.observe.requests import RequestRecord
from tests.support.router_process import RouterProcess, running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "temperature": 0}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _access(path: str, status: int) -> Any:
    def matches(record: dict[str, Any]) -> bool:
        return bool(
            record.get("logger") == "corral.access"
            and record.get("path") == path
            and record.get("status") == status
        )

    return matches


def test_a_whole_answer_logs_model_status_and_tokens(router: RouterProcess) -> None:
    reply = router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
    assert reply.status_code == 200
    record = router.wait_for_record(_access("/v1/chat/completions", 200))
    usage = reply.json()["usage"]
    assert record["method"] == "POST"
    assert record["model"] == "alpha"
    assert record["prompt_tokens"] == usage["prompt_tokens"]
    assert record["generated_tokens"] == usage["completion_tokens"]
    assert record["tokens_per_s"] > 0
    assert isinstance(record["duration_ms"], int)
    assert record["event"].startswith("POST /v1/chat/completions 200 ")
    assert record["level"] == "info"


def test_a_stream_logs_the_tokens_of_its_last_chunk(router: RouterProcess) -> None:
    body = {"model": "alpha", **CHAT, "stream": True, "stream_options": {"include_usage": True}}
    with router.client.stream("POST", "/v1/chat/completions", json=body) as stream:
        events = [line for line in stream.iter_lines() if line.startswith("data: {")]
    last = json.loads(events[-1].removeprefix("data: "))
    record = router.wait_for_record(_access("/v1/chat/completions", 200))
    assert record["model"] == "alpha"
    assert record["generated_tokens"] == last["timings"]["predicted_n"]
    assert record["tokens_per_s"] == round(last["timings"]["predicted_per_second"], 1)


def test_a_refusal_names_the_model_asked_for(router: RouterProcess) -> None:
    assert (
        router.client.post("/v1/chat/completions", json={"model": "nope", **CHAT}).status_code
        == 404
    )
    record = router.wait_for_record(_access("/v1/chat/completions", 404))
    assert record["model"] == "nope"
    assert "generated_tokens" not in record


def test_no_log_requests_prints_no_access_line(models_dir: Path) -> None:
    with running_router(["--models-dir", str(models_dir), "--no-log-requests"]) as router:
        assert router.client.get("/v1/models").status_code == 200
        assert router.client.get("/health").status_code == 200
    # stop() has read the whole log by now: a line would be in it.
    assert router.records
    assert not [r for r in router.records if r.get("logger") == "corral.access"]


class _Terminal:
    """A router whose stderr is a pseudo-terminal, read line by line."""

    def __init__(self, args: list[str]) -> None:
        self._master, slave = pty.openpty()
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("LLAMA_", "CORRAL_", "HF_"))
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "router", "serve", "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=slave,
            env=env,
        )
        os.close(slave)
        self._buffer = b""

    def line_with(self, text: str, timeout: float = 60.0) -> str:
        """The first line (colours removed) with ``text``; a read waits ``timeout`` at most."""
        while True:
            *lines, self._buffer = self._buffer.split(b"\n")
            for raw in lines:
                line = _ANSI.sub("", raw.decode(errors="replace")).rstrip("\r")
                if text in line:
                    self._buffer = b"\n".join([*lines[lines.index(raw) + 1 :], self._buffer])
                    return line
            ready, _, _ = select.select([self._master], [], [], timeout)
            assert ready, f"no line with {text!r}"
            self._buffer += os.read(self._master, 65536)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        os.close(self._master)


@pytest.fixture
def terminal(request: pytest.FixtureRequest, models_dir: Path) -> Iterator[_Terminal]:
    term = _Terminal(["--models-dir", str(models_dir), *request.param])
    try:
        yield term
    finally:
        term.close()


@pytest.mark.parametrize("terminal", [[]], indirect=True)
def test_on_a_terminal_the_access_line_is_readable_text(terminal: _Terminal) -> None:
    listening = terminal.line_with("corral listening")
    url = re.search(r"url=(\S+)", listening)
    assert url is not None
    reply = httpx.post(f"{url[1]}/v1/chat/completions", json={"model": "alpha", **CHAT}, timeout=60)
    assert reply.status_code == 200
    line = terminal.line_with("POST /v1/chat/completions 200")
    assert not line.lstrip().startswith("{")
    assert "[info" in line
    assert "model=alpha" in line
    assert "path=" not in line  # the message says it already
    assert f"generated_tokens={reply.json()['usage']['completion_tokens']}" in line
    assert re.search(r"tokens_per_s=[0-9.]+", line)


@pytest.mark.parametrize("terminal", [["--log-format", "json"]], indirect=True)
def test_log_format_json_wins_on_a_terminal(terminal: _Terminal) -> None:
    listening = json.loads(terminal.line_with('"corral listening"'))
    reply = httpx.get(f"{listening['url']}/v1/models/alpha", timeout=60)  # no poll: at info
    assert reply.status_code == 200
    record = json.loads(terminal.line_with('"GET /v1/models/alpha 200'))
    assert record["logger"] == "corral.access"
    assert record["status"] == 200
    assert "restated" not in record


def test_a_record_reads_the_counts_of_each_apis_answer() -> None:
    """One reader for llama-server's timings (a restore included), OpenAI's usage and Ollama's
    counts: the access line, the activity view and the traces all show what it read."""
    llama = RequestRecord(id="r1")
    tokens_from_answer(
        {"timings": {"cache_n": 40, "prompt_n": 3, "predicted_n": 5, "restored_n": 40}}, llama
    )
    assert (llama.cached_tokens, llama.prompt_tokens, llama.restored_tokens) == (40, 3, 40)
    assert llama.completion_tokens == 5
    ollama = RequestRecord(id="r2")
    tokens_from_answer({"prompt_eval_count": 12, "eval_count": 7, "eval_duration": 2e6}, ollama)
    assert (ollama.prompt_tokens, ollama.completion_tokens, ollama.predicted_ms) == (12, 7, 2.0)
    assert ollama.restored_tokens is None
    # Anthropic's input_tokens leave the cached part out: the record has the whole prompt.
    anthropic = RequestRecord(id="r3")
    usage = {"input_tokens": 1, "cache_read_input_tokens": 35, "output_tokens": 4}
    tokens_from_answer({"usage": usage}, anthropic)
    assert (anthropic.prompt_tokens, anthropic.cached_tokens) == (36, 35)
