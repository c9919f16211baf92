"""What a model is expected to hold before it runs, and what a running worker holds."""

from __future__ import annotations

import os
from pathlib import Path

from router.catalogue import CatalogueEntry
from router.memory_budget import WORKER_PROCESS_BYTES, MemoryBudget, resident_memory
from router.registry import ModelState, Status
from tests.support.tiny_gguf import write_tiny_gguf
from worker.settings import parse_worker_args


class _ThisProcess:
    """A stand-in for a worker's process handle: this test's own pid, which surely runs."""

    pid = os.getpid()


def _state(entry: CatalogueEntry) -> ModelState:
    return ModelState(entry, [])


def _file(path: Path, size: int) -> Path:
    path.write_bytes(b"\0" * size)
    return path


def test_before_it_ever_ran_a_model_is_expected_to_hold_its_files_and_a_process(
    tmp_path: Path,
) -> None:
    weights = _file(tmp_path / "m.gguf", 3000)  # no header to read a context from
    projector = _file(tmp_path / "mmproj-m.gguf", 500)
    entry = CatalogueEntry("m", weights, "models_dir", mmproj=projector)
    assert MemoryBudget(1 << 30).expected(_state(entry)) == 3500 + WORKER_PROCESS_BYTES


def test_the_estimate_adds_the_kv_cache_its_header_and_options_imply(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_tiny_gguf(path)  # 2 layers, 4 heads of 16 (64 wide), 2 of them for keys and values
    files = path.stat().st_size + WORKER_PROCESS_BYTES

    def expected(*options: tuple[str, str]) -> int:
        entry = CatalogueEntry("tiny", path, "models_dir", options=tuple(sorted(options)))
        return MemoryBudget(1 << 30).expected(_state(entry)) - files

    assert parse_worker_args(["--model", str(path)]).ctx_size == 4096
    assert expected() == 2 * 4096 * (2 * 16) * 2 * 2  # the worker's default context, f16
    assert expected(("ctx-size", "1024")) == 2 * 1024 * (2 * 16) * 2 * 2
    assert expected(("ctx-size", "0")) == 2 * 2048 * (2 * 16) * 2 * 2  # 0: the trained context
    with_q8 = expected(("ctx-size", "1024"), ("cache-type-k", "q8_0"), ("cache-type-v", "q8_0"))
    assert with_q8 == 2 * 1024 * (2 * 16) * 2 * 34 // 32


def test_a_split_model_counts_every_shard(tmp_path: Path) -> None:
    first = _file(tmp_path / "big-00001-of-00003.gguf", 100)
    _file(tmp_path / "big-00002-of-00003.gguf", 200)
    _file(tmp_path / "big-00003-of-00003.gguf", 300)
    _file(tmp_path / "other-00002-of-00003.gguf", 1000)  # another model's shard
    entry = CatalogueEntry("big", first, "models_dir")
    assert MemoryBudget(1 << 30).expected(_state(entry)) == 600 + WORKER_PROCESS_BYTES


def test_a_declared_size_wins_over_files_and_measurements(tmp_path: Path) -> None:
    entry = CatalogueEntry("m", _file(tmp_path / "m.gguf", 3000), "models_dir", memory=42)
    state = _state(entry)
    state.peak_memory = 10_000
    budget = MemoryBudget(1 << 30, measure=lambda _: 99_999)
    assert budget.expected(state) == 42
    state.status = Status.LOADED
    assert budget.held(state) == 42


def test_a_running_model_holds_what_is_measured_and_a_loading_one_what_is_expected(
    tmp_path: Path,
) -> None:
    entry = CatalogueEntry("m", _file(tmp_path / "m.gguf", 3000), "models_dir")
    state = _state(entry)
    budget = MemoryBudget(1 << 30, measure=lambda _: 1000)
    state.status = Status.LOADING
    assert budget.held(state) == 3000 + WORKER_PROCESS_BYTES  # still growing towards that
    state.status = Status.LOADED
    assert budget.held(state) == 1000
    assert budget.expected(state) == 1000  # what it was seen to hold, for its next load


def test_a_sleeping_model_counts_for_what_it_needs_to_wake(tmp_path: Path) -> None:
    entry = CatalogueEntry("m", _file(tmp_path / "m.gguf", 3000), "models_dir")
    state = _state(entry)
    state.status, state.peak_memory = Status.SLEEPING, 5000
    budget = MemoryBudget(1 << 30, measure=lambda _: 200)  # weights freed while asleep
    assert budget.held(state) == 5000
    assert state.peak_memory == 5000


def test_resident_memory_reads_the_worker_process() -> None:
    state = _state(CatalogueEntry("m", Path("m.gguf"), "models_dir"))
    assert resident_memory(state) is None  # not running
    state.process = _ThisProcess()  # type: ignore[assignment]
    rss = resident_memory(state)
    assert rss is not None
    assert rss > 0
