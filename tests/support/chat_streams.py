"""Streamed chats against a running router, and waits for the states it reports but does not
announce (docs/protocol.md §4, §5)."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, cast

from tests.support.router_process import RouterProcess

__all__ = [
    "active_requests",
    "generating",
    "long_answer",
    "queue_depth",
    "stream_body",
    "until",
    "wait_queued",
]

CHAT = [{"role": "user", "content": "hi"}]


def stream_body(model: str, max_tokens: int) -> dict[str, Any]:
    return {"model": model, "messages": CHAT, "max_tokens": max_tokens, "stream": True,
            "ignore_eos": True}  # fmt: skip


@contextmanager
def long_answer(router: RouterProcess, model: str) -> Iterator[None]:
    """``model`` generates until the block ends (it needs a context of 32k): a worker busy with
    it is never evicted, and a stopped one drains it until the block ends."""
    with router.client.stream("POST", "/v1/chat/completions", json=stream_body(model, 30_000)) as s:
        lines = s.iter_lines()
        next(line for line in lines if '"content":"' in line)
        yield


def generating(router: RouterProcess, stack: ExitStack, body: dict[str, Any]) -> None:
    """Stream the completion ``body`` and return once its first token came; the stream is
    dropped when ``stack`` closes."""
    reply = stack.enter_context(
        router.client.stream("POST", "/v1/completions", json={**body, "stream": True})
    )
    assert reply.status_code == 200
    # Kept until the stack closes: a discarded iterator would close the stream now.
    lines = cast("Generator[str, None, None]", reply.iter_lines())
    stack.callback(lines.close)
    while not next(lines).startswith("data:"):
        pass


def _gauge(router: RouterProcess, sample: str) -> float:
    """One sample of the router's /metrics, by its name and labels as written there."""
    lines = router.client.get("/metrics").text.splitlines()
    return float(next(line.split()[1] for line in lines if line.startswith(sample)))


def queue_depth(router: RouterProcess) -> float:
    return _gauge(router, "corral_queue_depth")


def active_requests(router: RouterProcess, model: str) -> float:
    """Requests holding a lease on ``model`` (router/scheduling/leases.py)."""
    return _gauge(router, f'corral_active_requests{{model="{model}"}}')


def until(condition: Callable[[], bool], what: str) -> None:
    """Poll for a state the router reports but does not announce, for at most a minute."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def wait_queued(router: RouterProcess, requests: int = 1) -> None:
    until(lambda: queue_depth(router) >= requests, f"{requests} request(s) to queue for a load")
