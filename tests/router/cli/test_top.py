"""``corral top`` in a real terminal (tmux) against a running router: it shows the models, the
host's memory and the requests, refreshes as new requests come, and ``q`` ends it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.router_process import RouterProcess, running_router

_REPOSITORY = Path(__file__).resolve().parents[3]
CHAT = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
# A finished request's row: its id, model, state and key (none without keys).
_DONE = re.compile(r"^r\d+ +alpha +done +- ", re.MULTILINE)


class _Tmux:
    """A tmux server of the test's own (its own socket), one detached session."""

    def __init__(self, command: str) -> None:
        self.socket = f"corral-top-{os.getpid()}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLAMA_", "CORRAL_"))}
        self._run("new-session", "-d", "-s", "top", "-x", "120", "-y", "40",
                  "-c", str(_REPOSITORY), command, env=env)  # fmt: skip

    def _run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True, text=True, timeout=30, check=False, env=env,
        )  # fmt: skip

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-t", "top").stdout

    def keys(self, *keys: str) -> None:
        self._run("send-keys", "-t", "top", *keys)

    def alive(self) -> bool:
        return self._run("has-session", "-t", "top").returncode == 0

    def close(self) -> None:
        self._run("kill-server")


def _until(condition: Callable[[], bool], what: Callable[[], str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; the screen:\n{what()}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def router(models_dir: Path) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "512"]) as process:
        yield process


@pytest.fixture
def tmux(router: RouterProcess) -> Iterator[_Tmux]:
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing (Debian: apt-get install tmux)")
        pytest.skip("tmux is missing")
    terminal = _Tmux(f"{sys.executable} -m router top --url {router.url} --interval 0.3")
    try:
        yield terminal
    finally:
        terminal.close()


def test_top_shows_the_models_memory_and_requests_live(router: RouterProcess, tmux: _Tmux) -> None:
    assert httpx.post(f"{router.url}/v1/chat/completions", json=CHAT, timeout=60).is_success
    _until(lambda: len(_DONE.findall(tmux.screen())) == 1, tmux.screen)
    screen = tmux.screen()
    assert "corral top" in screen
    assert "MODEL" in screen
    assert "STATUS" in screen
    assert "alpha" in screen
    assert "loaded" in screen
    assert "RAM" in screen  # the host's memory, as a device
    assert "EVENTS" in screen
    # A second request appears without a key press: the screen refreshes by itself.
    assert httpx.post(f"{router.url}/v1/chat/completions", json=CHAT, timeout=60).is_success
    _until(lambda: len(_DONE.findall(tmux.screen())) == 2, tmux.screen)
    tmux.keys("q")
    _until(lambda: not tmux.alive(), tmux.screen, timeout=20)


def _top_once(router: RouterProcess, pipe: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLAMA_", "CORRAL_"))}
    top = f"{sys.executable} -m router top --once --url {router.url}"
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {top}{pipe}"],
        capture_output=True, text=True, timeout=60, check=False, env=env, cwd=_REPOSITORY,
    )  # fmt: skip


def test_a_whole_answer_shows_its_answer_time_not_a_first_token(router: RouterProcess) -> None:
    """A request answered in one piece has no first token to show: its column says the time
    was the answer's (issue 54); a stream's shows its first token's."""
    assert httpx.post(f"{router.url}/v1/chat/completions", json=CHAT, timeout=60).is_success
    streamed = {**CHAT, "stream": True}
    assert httpx.post(f"{router.url}/v1/chat/completions", json=streamed, timeout=60).is_success
    screen = _top_once(router).stdout
    rows = [line for line in screen.splitlines() if re.match(r"^r\d+ +alpha +done", line)]
    stream, whole = rows[:2]  # newest first
    assert re.search(r" answer \d+\.\d+s ", stream) is None, stream
    assert re.search(r" \d+\.\d+s +\d+\.\d+s ", stream), stream
    assert re.search(r" answer \d+\.\d+s ", whole), whole


def test_top_once_into_a_pipe_prints_plain_text(router: RouterProcess) -> None:
    """``corral top --once | head``: no terminal, so no colour or cursor codes, and the reader
    closing the pipe early is no traceback."""
    done = _top_once(router, " | head -n 3")
    assert done.stdout.startswith("corral top  "), done.stdout
    assert "\x1b" not in done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
