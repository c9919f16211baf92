"""llama-server's -C, -Cr and --prio in a worker: every thread's CPUs and niceness."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from corral.children.protocol import EXIT_STOPPED, RELEASE_COMMAND, SPARE_STATE
from tests.support.worker_process import WorkerProcess, worker
from worker.host.cpu_placement import cpu_set, parse_cpu_mask, parse_cpu_range


@pytest.fixture
def alpha(models_dir: Path) -> Path:
    return models_dir / "alpha.gguf"


@pytest.mark.parametrize(
    ("mask", "cpus"), [("1", {0}), ("0x5", {0, 2}), ("F0", {4, 5, 6, 7}), ("0", set())]
)
def test_a_mask_is_hex_bit_n_for_cpu_n(mask: str, cpus: set[int]) -> None:
    assert parse_cpu_mask(mask) == cpus


@pytest.mark.parametrize(("text", "cpus"), [("0-0", {0}), ("2-4", {2, 3, 4}), ("-1", {0, 1})])
def test_a_range_includes_both_ends(text: str, cpus: set[int]) -> None:
    assert parse_cpu_range(text) == cpus


def test_mask_and_range_add_up_and_an_open_end_stops_at_the_last_cpu() -> None:
    assert cpu_set("1", "2-", {0, 1, 2, 3}) == {0, 2, 3}
    assert cpu_set(None, "-", {0, 1}) == {0, 1}
    assert cpu_set(None, None, {0, 1}) is None


@pytest.mark.parametrize(
    ("mask", "cpu_range", "message"),
    [
        ("zz", None, "--cpu-mask: expected a hex mask"),
        ("0x", None, "--cpu-mask: names no CPU"),
        ("4", None, "--cpu-mask: CPU 2 not available"),
        (None, "3", "--cpu-range: expected a range"),
        (None, "0-7", "--cpu-range: CPU 2,3,4,5,6,7 not available"),
        (None, "4-", "--cpu-range: names no CPU"),
        (None, "0-512", "--cpu-range: CPUs are numbered below 512"),
    ],
)
def test_what_names_no_cpu_of_the_machine_is_refused(
    mask: str | None, cpu_range: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        cpu_set(mask, cpu_range, {0, 1})


def _threads(pid: int) -> list[int]:
    return [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]


@contextmanager
def _answering(child: WorkerProcess) -> Iterator[None]:
    """While a streamed completion is under way: its first token has come, not its last."""
    body = {"prompt": "Once upon a time", "n_predict": 16, "stream": True}
    with httpx.stream("POST", f"{child.url}/completion", json=body, timeout=60) as reply:
        assert reply.status_code == 200
        next(reply.iter_lines())
        yield


def test_cpu_range_pins_every_thread_while_it_answers(alpha: Path) -> None:
    first = min(os.sched_getaffinity(0))
    with worker(alpha, "-Cr", f"{first}-{first}") as child, _answering(child):
        threads = _threads(child.process.pid)
        assert len(threads) > 1  # the engine's, the server's and llama.cpp's threads too
        pinned = {tid: os.sched_getaffinity(tid) for tid in threads}
        assert pinned == {tid: {first} for tid in threads}


def test_a_spare_pins_the_threads_of_the_model_it_is_handed(alpha: Path) -> None:
    first = min(os.sched_getaffinity(0))
    spare = WorkerProcess(None, as_child=True)
    try:
        spare.hand_over(alpha, "-C", f"{1 << first:x}")
        with _answering(spare):
            threads = _threads(spare.process.pid)
            pinned = {tid: os.sched_getaffinity(tid) for tid in threads}
            assert pinned == {tid: {first} for tid in threads}
    finally:
        spare.close()


def _may_take(nice: int) -> bool:
    """Whether a process started from here may take this nice value (lowering it needs root,
    CAP_SYS_NICE or an RLIMIT_NICE that allows it)."""
    probe = f"import os; os.setpriority(os.PRIO_PROCESS, 0, {nice})"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


@pytest.mark.parametrize(("prio", "nice"), [("-1", 5), ("2", -10)])
def test_prio_renices_every_thread_or_warns_where_not_permitted(
    prio: str, nice: int, alpha: Path, tmp_path: Path
) -> None:
    # As llama-server's set_process_priority: where the nice value may not be taken (raising
    # the priority, unprivileged), one warning, and the worker serves at the one it has.
    permitted = _may_take(nice)
    expected = nice if permitted else os.getpriority(os.PRIO_PROCESS, 0)
    log = tmp_path / "worker.log"
    # Without the KV disk tier: its writer thread runs at nice 10 on purpose, whatever --prio
    # (worker/cache/kv_writer.py); every thread that serves takes the --prio.
    with worker(alpha, "--prio", prio, "--no-kv-persist", log=log) as child, _answering(child):
        threads = _threads(child.process.pid)
        niceness = {tid: os.getpriority(os.PRIO_PROCESS, tid) for tid in threads}
    assert niceness == dict.fromkeys(threads, expected)
    warnings = log.read_text().count("failed to set process priority")
    assert warnings == (0 if permitted else 1)


def test_a_released_worker_gives_its_next_model_its_own_cpus_back(models_dir: Path) -> None:
    own = os.sched_getaffinity(0)
    first = min(own)
    spare = WorkerProcess(None, as_child=True)
    try:
        spare.hand_over(models_dir / "alpha.gguf", "-Cr", f"{first}-{first}")
        spare.send(RELEASE_COMMAND + b"\n")
        spare.read_until(SPARE_STATE)
        spare.hand_over(models_dir / "beta.gguf")
        with _answering(spare):
            threads = _threads(spare.process.pid)
            pinned = {tid: os.sched_getaffinity(tid) for tid in threads}
            assert pinned == {tid: own for tid in threads}
    finally:
        spare.close()


def test_a_reniced_worker_ends_when_released(alpha: Path) -> None:
    # Its niceness cannot be taken back unprivileged: the next model must not inherit it.
    reniced = _may_take(5)
    spare = WorkerProcess(None, as_child=True)
    try:
        spare.hand_over(alpha, "--prio", "-1")
        spare.send(RELEASE_COMMAND + b"\n")
        if reniced:
            with pytest.raises(AssertionError, match="closed stdout"):
                spare.read_until(SPARE_STATE)
            assert spare.process.wait(timeout=30) == EXIT_STOPPED
        else:  # its priority is as it was: it serves again
            spare.read_until(SPARE_STATE)
    finally:
        spare.close()


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["-C", "xyz"], "--cpu-mask"),
        (["-Cr", "0-4096"], "--cpu-range"),
        (["--cpu-range", f"{max(os.sched_getaffinity(0)) + 1}-"], "--cpu-range"),
        (["--prio", "4"], "'prio'"),
    ],
)
def test_a_bad_mask_range_or_priority_is_refused_at_startup(
    flags: list[str], named: str, alpha: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "worker", "--model", str(alpha), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert named in done.stderr
