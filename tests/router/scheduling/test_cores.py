"""The CPU cores shared among busy workers (docs/serving.md, "CPU threads"), on the scheduling
harness: the rule, when a command goes out, who is left alone, and the command reaching the
worker's process."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from router.scheduling.cores import CoreShare, send_in, shares
from router.scheduling.leases import release_all
from router.workers.model_state import ModelState
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio

PLACED = {"options": (("threads", "3"),)}


def test_the_busy_share_the_cores_the_longest_busy_get_the_remainder() -> None:
    assert shares(["a"], 8) == {"a": 8}
    assert shares(["a", "b"], 8) == {"a": 4, "b": 4}
    assert shares(["a", "b", "c"], 8) == {"a": 3, "b": 3, "c": 2}
    assert shares(["a", "b", "c"], 2) == {"a": 1, "b": 1, "c": 1}  # never fewer than one
    assert shares([], 8) == {}


class _Sent:
    """What the share told each worker, in order."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, int]] = []

    def __call__(self, state: ModelState, threads: int) -> None:
        self.commands.append((state.name, threads))


async def _loaded(h: Harness, *names: str) -> list[ModelState]:
    return [await h.load(name) for name in names]


async def test_a_model_alone_keeps_every_core_and_is_never_told() -> None:
    async with harness(2) as h:
        (a,) = await _loaded(h, "a")
        sent = _Sent()
        cores = CoreShare(4, sent)
        for _ in range(3):  # one request after another, and two at once
            request: dict[str, Any] = {}
            cores.busy(a, request)
            cores.busy(a, request)
            release_all(request)
        assert sent.commands == []
        assert cores.threads(a) == 4


async def test_two_busy_models_split_the_cores_and_the_one_left_busy_gets_them_back() -> None:
    async with harness(3) as h:
        a, b, c = await _loaded(h, "a", "b", "c")
        sent = _Sent()
        cores = CoreShare(4, sent)
        first: dict[str, Any] = {}
        second: dict[str, Any] = {}
        cores.busy(a, first)
        cores.busy(b, second)
        assert sent.commands == [("a", 2), ("b", 2)]
        cores.busy(b, {})  # a second request on a busy model changes nothing
        cores.busy(c, {})
        assert sent.commands[2:] == [("b", 1), ("c", 1)]  # a, busy longest, keeps the extra one
        assert [cores.threads(s) for s in (a, b, c)] == [2, 1, 1]
        release_all(first)  # a idles with its 2; b (still busy twice) and c share the 4
        assert sent.commands[4:] == [("b", 2), ("c", 2)]
        assert cores.threads(a) == 2


async def test_a_model_that_places_its_threads_is_never_told_nor_counted() -> None:
    async with harness(2, c=PLACED) as h:
        a, c = await _loaded(h, "a", "c")
        sent = _Sent()
        cores = CoreShare(4, sent)
        cores.busy(c, {})
        cores.busy(a, {})  # alone among the shared: all the cores, as it has
        assert sent.commands == []
        assert cores.threads(c) is None


async def test_a_new_worker_starts_with_every_core() -> None:
    async with harness(2) as h:
        a, b = await _loaded(h, "a", "b")
        sent = _Sent()
        cores = CoreShare(2, sent)
        cores.busy(a, {})
        request: dict[str, Any] = {}
        cores.busy(b, request)
        assert cores.threads(b) == 1
        release_all(request)
        await h.pool.stop(b)
        b = await h.load("b")  # a fresh process: llama.cpp's default again
        assert cores.threads(b) == 2
        cores.busy(b, {})
        assert sent.commands[-1] == ("b", 1)


async def test_the_command_goes_down_the_workers_stdin() -> None:
    async with harness(2) as h, anyio.create_task_group() as group:
        a, b = await _loaded(h, "a", "b")
        cores = CoreShare(2, send_in(group))
        cores.busy(a, {})
        cores.busy(b, {})
        await anyio.wait_all_tasks_blocked()
        for name in "ab":
            assert h.launcher.children[name].received[-1] == "threads command 1 1"
