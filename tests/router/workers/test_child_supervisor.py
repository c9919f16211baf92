"""One child's supervision (docs/protocol.md §1), driven through the in-memory launcher.

Escalation is checked by the order in which the child receives the exit command and signals,
with a zero stop timeout so each step follows the last at once: no test waits on a clock.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from corral.children.protocol import LogLine, StateMessage
from router.workers.child_supervisor import (
    EXIT_CANNOT_START,
    EXIT_SUPERVISION_FAILED,
    ChildExit,
    ChildSupervisor,
)
from router.workers.launcher import SubprocessLauncher
from tests.support.fakes.fake_launcher import FakeChild, FakeLauncher

pytestmark = pytest.mark.anyio

ARGV = ["python", "-m", "worker", "--alias", "child"]


class Supervised:
    def __init__(self, launcher: FakeLauncher, supervisor: ChildSupervisor) -> None:
        self.launcher, self.supervisor = launcher, supervisor
        self.states: list[StateMessage] = []
        self.ended: list[ChildExit] = []

    async def child(self) -> FakeChild:
        with anyio.fail_after(5):
            while "child" not in self.launcher.children:
                await self.launcher.spawned.wait()
        return self.launcher.children["child"]


@asynccontextmanager
async def supervised(
    *,
    stop_timeout: float = 0.0,
    on_state: Callable[[StateMessage], None] | None = None,
    launcher: FakeLauncher | None = None,
) -> AsyncIterator[Supervised]:
    """A supervisor running its child in a task; the block ends once the child has exited."""
    launcher = launcher or FakeLauncher()
    states: list[StateMessage] = []
    supervisor = ChildSupervisor(
        launcher,
        ARGV,
        {"CORRAL_TEST": "1"},
        name="child",
        source="worker",
        on_state=on_state or states.append,
        stop_timeout=stop_timeout,
    )
    harness = Supervised(launcher, supervisor)
    harness.states = states

    async def run() -> None:
        harness.ended.append(await supervisor.run())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            yield harness


async def test_spawn_passes_argv_and_environment_and_hands_over_states_in_order() -> None:
    async with supervised() as s:
        child = await s.child()
        assert s.supervisor.process is child
        child.say(StateMessage("loading", {"done": 1}))
        child.say(LogLine('{"event": "relayed, not handed over", "level": "info"}'))
        child.ready()
        child.crash(0)
    assert [message.state for message in s.states] == ["loading", "ready"]
    assert s.launcher.environments["child"] == {"CORRAL_TEST": "1"}
    assert s.ended == [ChildExit(0, "exited with code 0")]
    assert s.supervisor.process is None
    assert s.supervisor.has_exited


async def test_the_exit_reason_quotes_the_last_error_the_child_logged() -> None:
    async with supervised() as s:
        (await s.child()).crash(1, "bad magic in GGUF header")
    (ended,) = s.ended
    assert (ended.returncode, ended.code) == (1, 1)
    assert ended.reason == "exited with code 1: bad magic in GGUF header"
    assert ended.last_words == "bad magic in GGUF header"


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (0, "exited with code 0"),  # a clean exit's last line explains nothing
        (3, "exited with code 3: ~llama_context: freeing the context"),
    ],
)
async def test_the_exit_reason_quotes_a_real_childs_last_stderr_line_only_for_a_failure(
    code: int, reason: str
) -> None:
    script = (
        f"import sys; print('~llama_context: freeing the context', file=sys.stderr); exit({code})"
    )
    supervisor = ChildSupervisor(
        SubprocessLauncher(),
        [sys.executable, "-c", script],
        dict(os.environ),
        name="child",
        source="worker",
        on_state=lambda message: None,
        stop_timeout=5.0,
    )
    with anyio.fail_after(30):
        ended = await supervisor.run()
    assert (ended.returncode, ended.reason) == (code, reason)
    assert ended.last_words == "~llama_context: freeing the context"  # the owner may still use it


async def test_a_signal_death_quotes_the_last_line_the_child_logged() -> None:
    async with supervised() as s:
        child = await s.child()
        child.say(LogLine("ggml_abort: out of memory"))
        await anyio.wait_all_tasks_blocked()
        child.signal_group(signal.SIGABRT)
    (ended,) = s.ended
    assert ended.reason == "killed by SIGABRT: ggml_abort: out of memory"


async def test_last_words_are_forgotten_once_the_child_got_past_them() -> None:
    async with supervised() as s:
        child = await s.child()
        child.say(LogLine("retrying after a hiccup"))
        await anyio.wait_all_tasks_blocked()
        s.supervisor.forget_last_words()
        child.crash(0)
    assert s.ended == [ChildExit(0, "exited with code 0")]


async def test_a_signal_death_is_reported_as_128_plus_the_signal() -> None:
    async with supervised() as s:
        (await s.child()).signal_group(signal.SIGKILL)  # killed from outside the router
    (ended,) = s.ended
    assert ended.returncode == -signal.SIGKILL
    assert ended.code == 128 + signal.SIGKILL
    assert ended.reason == "killed by SIGKILL"


async def test_a_child_that_cannot_start_exits_with_the_shells_code() -> None:
    launcher = FakeLauncher()
    launcher.launch_error = FileNotFoundError("no such interpreter")
    async with supervised(launcher=launcher) as s:
        pass
    (ended,) = s.ended
    assert ended.code == EXIT_CANNOT_START
    assert ended.reason == "cannot start: no such interpreter"
    assert ended.launch_error is launcher.launch_error
    assert s.launcher.launched == []


async def test_a_failure_in_the_owner_kills_the_child_and_ends_as_its_failure() -> None:
    def broken(message: StateMessage) -> None:
        raise ValueError("cannot read that")

    async with supervised(on_state=broken) as s:
        child = await s.child()
        child.ready()
    (ended,) = s.ended
    assert ended.returncode == EXIT_SUPERVISION_FAILED
    assert ended.reason == "internal error supervising the worker: cannot read that"
    assert isinstance(ended.internal_error, ValueError)
    assert child.received == ["SIGKILL"]


async def test_a_child_that_obeys_gets_only_the_exit_command() -> None:
    async with supervised(stop_timeout=3600.0) as s:  # never reached: the child obeys
        child = await s.child()
        await s.supervisor.stop()
    assert child.received == ["exit command"]
    assert s.ended[0].returncode == 0


async def test_a_child_that_ignores_the_exit_command_gets_sigterm() -> None:
    async with supervised() as s:
        child = await s.child()
        child.ignore_exit_command = True
        await s.supervisor.stop()
    assert child.received == ["exit command", "SIGTERM"]
    assert s.ended[0].code == 128 + signal.SIGTERM


async def test_a_hung_child_gets_the_exit_command_then_sigterm_then_sigkill() -> None:
    async with supervised() as s:
        child = await s.child()
        child.ignore_exit_command = child.ignore_sigterm = True
        await s.supervisor.stop()
    assert child.received == ["exit command", "SIGTERM", "SIGKILL"]
    assert s.ended[0].code == 128 + signal.SIGKILL


async def test_a_stop_at_once_kills_straight_away() -> None:
    async with supervised(stop_timeout=3600.0) as s:
        child = await s.child()
        await s.supervisor.stop(at_once=True)
    assert child.received == ["SIGKILL"]


async def test_a_child_stopped_before_it_runs_is_never_launched() -> None:
    launcher = FakeLauncher()
    supervisor = ChildSupervisor(
        launcher,
        ARGV,
        {},
        name="child",
        source="worker",
        on_state=lambda message: None,
        stop_timeout=0.0,
    )
    ended: list[ChildExit] = []

    async def run() -> None:
        ended.append(await supervisor.run())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(supervisor.stop)
            await anyio.wait_all_tasks_blocked()  # stop() waits for the child to end
            group.start_soon(run)
    assert launcher.launched == []
    assert ended == [ChildExit(0, "stopped before it started")]


@pytest.mark.parametrize(("at_once", "received"), [(False, ["exit command"]), (True, ["SIGKILL"])])
async def test_a_child_stopped_while_spawning_is_stopped_once_spawned(
    at_once: bool, received: list[str]
) -> None:
    launcher = FakeLauncher()
    launcher.launch_gate = anyio.Event()
    async with supervised(launcher=launcher, stop_timeout=3600.0) as s:
        async with anyio.create_task_group() as group:
            await anyio.wait_all_tasks_blocked()  # the spawn is under way
            group.start_soon(lambda: s.supervisor.stop(at_once=at_once))
            await anyio.wait_all_tasks_blocked()
            assert s.supervisor.stop_requested
            launcher.launch_gate.set()
        child = launcher.children["child"]
    assert child.received == received
