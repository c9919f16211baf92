"""What a model is expected to hold before it runs, and what a running worker holds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from router.capacity.memory_budget import (
    WORKER_PROCESS_BYTES,
    MemoryBudget,
    resident_memory,
)
from router.catalogue.catalogue import CatalogueEntry
from router.workers.launcher import process_rss
from router.workers.model_state import ModelFields, ModelState, Status
from tests.support.files.tiny_gguf import write_tiny_gguf
from worker.settings.parse import parse_worker_args


def _state(entry: CatalogueEntry, **fields: Any) -> ModelState:
    """A model in the given state, as the worker pool would have left it."""
    return ModelState(ModelFields(entry, [], **fields))


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

    assert parse_worker_args(["--model", str(path)]).ctx_size == 0
    # The default: the trained context (2048) once, the automatic slots sharing one cache, f16.
    assert expected() == 2 * 2048 * (2 * 16) * 2 * 2
    assert expected(("parallel", "3")) == 3 * 2 * 2048 * (2 * 16) * 2 * 2  # one per slot
    assert expected(("parallel", "3"), ("kv-unified", "true")) == expected()
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
    budget = MemoryBudget(1 << 30, measure=lambda _: 99_999)
    assert budget.expected(_state(entry, peak_memory=10_000)) == 42
    assert budget.held(_state(entry, peak_memory=10_000, status=Status.LOADED)) == 42


def test_a_running_model_holds_what_is_measured_and_a_loading_one_what_is_expected(
    tmp_path: Path,
) -> None:
    entry = CatalogueEntry("m", _file(tmp_path / "m.gguf", 3000), "models_dir")
    budget = MemoryBudget(1 << 30, measure=lambda _: 1000)
    loading = _state(entry, status=Status.LOADING)
    assert budget.held(loading) == 3000 + WORKER_PROCESS_BYTES  # still growing towards that
    assert budget.held(_state(entry, status=Status.LOADED)) == 1000
    # Once the scheduler has noted that peak, it is what the model needs for its next load.
    assert budget.expected(_state(entry, peak_memory=1000)) == 1000


def test_a_sleeping_model_counts_for_what_it_needs_to_wake(tmp_path: Path) -> None:
    entry = CatalogueEntry("m", _file(tmp_path / "m.gguf", 3000), "models_dir")
    state = _state(entry, status=Status.SLEEPING, peak_memory=5000)
    budget = MemoryBudget(1 << 30, measure=lambda _: 200)  # weights freed while asleep
    assert budget.held(state) == 5000
    assert state.peak_memory == 5000


def test_resident_memory_reads_the_worker_process() -> None:
    state = _state(CatalogueEntry("m", Path("m.gguf"), "models_dir"))
    assert resident_memory(state) is None  # not running
    rss = process_rss(os.getpid())  # this test's own process, which surely runs
    assert rss is not None
    assert rss > 0


def test_measuring_remembers_nothing(tmp_path: Path) -> None:
    entry = CatalogueEntry("m", _file(tmp_path / "m.gguf", 3000), "models_dir")
    state = _state(entry, status=Status.LOADED)
    budget = MemoryBudget(1 << 30, measure=lambda _: 7000)
    assert budget.measure(state) == budget.held(state) == 7000
    assert state.peak_memory == 0  # only the scheduler notes a peak, through the worker pool
