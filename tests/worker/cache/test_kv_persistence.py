"""Slot caches kept across a worker's graceful stop (docs/serving.md, "KV cache across restarts").

Each test runs real workers on a tiny model: one answers and is stopped with the exit command
(as the router stops a worker it evicts), the next one starts on the same model and folder.
Greedy decoding on the same KV bits gives the same tokens, so a restore is compared with an
uninterrupted run token for token.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.worker_process import worker

# Long enough to be worth saving (at least 16 tokens) on the tiny model's word vocabulary.
FIRST = "once upon a time there was a little model that said hello to the world and " * 3
SECOND = FIRST + " then the story goes on with people who find water"
OTHER = "the people of the water made a long way down to the first day of the story " * 3


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("kv-model") / "kv.gguf")


def _complete(url: str, prompt: str, **extra: Any) -> dict[str, Any]:
    body = {"prompt": prompt, "n_predict": 8, "temperature": 0, "ignore_eos": True, **extra}
    answer = httpx.post(f"{url}/completion", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _saved(folder: Path) -> list[Path]:
    return sorted(folder.glob("*/*.kv"))


def _answer_then_stop(model: Path, folder: Path, prompt: str, *args: str) -> None:
    """One worker's life: answer ``prompt``, then stop as an evicted worker does."""
    with worker(model, "--kv-cache-dir", str(folder), *args) as process:
        _complete(process.url, prompt)
        assert process.stop() == 0


def _uninterrupted(model: Path) -> dict[str, Any]:
    with worker(model, "--no-kv-persist") as process:
        _complete(process.url, FIRST)
        return _complete(process.url, SECOND)


def test_a_cache_saved_at_stop_is_restored_and_gives_the_same_tokens(
    model: Path, tmp_path: Path
) -> None:
    reference = _uninterrupted(model)
    _answer_then_stop(model, tmp_path, FIRST)
    assert len(_saved(tmp_path)) == 1
    with worker(model, "--kv-cache-dir", str(tmp_path)) as process:
        resumed = _complete(process.url, SECOND)
    assert resumed["timings"]["cache_n"] > 0
    assert resumed["timings"]["cache_n"] == reference["timings"]["cache_n"]
    assert resumed["content"] == reference["content"]


def test_a_cache_set_aside_in_memory_is_saved_at_stop_too(model: Path, tmp_path: Path) -> None:
    reference = _uninterrupted(model)
    with worker(model, "--kv-cache-dir", str(tmp_path)) as process:
        _complete(process.url, FIRST, id_slot=0)
        # Automatic slots share one cache: as OTHER starts, FIRST's idle slot is copied to
        # host memory and cleared (worker/cache/prompt_cache.py); the stop saves the copy as well.
        _complete(process.url, OTHER, id_slot=1)
        assert process.stop() == 0
    assert len(_saved(tmp_path)) == 2
    with worker(model, "--kv-cache-dir", str(tmp_path)) as process:
        resumed = _complete(process.url, SECOND)
    assert resumed["timings"]["cache_n"] == reference["timings"]["cache_n"]
    assert resumed["content"] == reference["content"]


def test_a_prompt_that_does_not_extend_a_saved_one_prefills(model: Path, tmp_path: Path) -> None:
    _answer_then_stop(model, tmp_path, FIRST)
    with worker(model, "--kv-cache-dir", str(tmp_path)) as process:
        assert _complete(process.url, OTHER)["timings"]["cache_n"] == 0


def test_no_kv_persist_saves_nothing(model: Path, tmp_path: Path) -> None:
    _answer_then_stop(model, tmp_path, FIRST, "--no-kv-persist")
    assert _saved(tmp_path) == []


def test_a_killed_worker_saved_nothing_at_its_stop_but_the_disk_tier_had_written(
    model: Path, tmp_path: Path
) -> None:
    with worker(model, "--kv-cache-dir", str(tmp_path), "--no-kv-persist") as process:
        _complete(process.url, FIRST)
    # Leaving the block SIGKILLs the worker: there is no graceful stop to save in, and with
    # --no-kv-persist no writer either (tests/worker/cache/test_kv_disk.py: with one).
    assert _saved(tmp_path) == []


def test_sleep_saves_and_the_wake_up_restores(model: Path, tmp_path: Path) -> None:
    reference = _uninterrupted(model)
    with worker(model, "--kv-cache-dir", str(tmp_path), "--sleep-idle-seconds", "1") as process:
        _complete(process.url, FIRST)
        process.read_until("sleeping")
        assert len(_saved(tmp_path)) == 1
        resumed = _complete(process.url, SECOND)
    assert resumed["timings"]["cache_n"] == reference["timings"]["cache_n"]
    assert resumed["content"] == reference["content"]


def _corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size - 100)


def _foreign(path: Path) -> None:
    path.write_bytes(b"GGUF" + os.urandom(4096))


@pytest.mark.parametrize("damage", [_corrupt, _truncate, _foreign])
def test_a_damaged_save_is_ignored(model: Path, tmp_path: Path, damage: Any) -> None:
    _answer_then_stop(model, tmp_path, FIRST)
    (saved,) = _saved(tmp_path)
    damage(saved)
    with worker(model, "--kv-cache-dir", str(tmp_path)) as process:
        answer = _complete(process.url, SECOND)
        assert process.process.poll() is None
    assert answer["timings"]["cache_n"] == 0


def test_a_save_made_with_other_cache_settings_is_not_restored(model: Path, tmp_path: Path) -> None:
    _answer_then_stop(model, tmp_path, FIRST, "--rope-freq-base", "5000")
    with worker(model, "--kv-cache-dir", str(tmp_path)) as process:
        assert _complete(process.url, SECOND)["timings"]["cache_n"] == 0


def test_a_save_moved_under_another_key_is_refused(model: Path, tmp_path: Path) -> None:
    """The folder name is only a hint: the key inside the file decides."""
    _answer_then_stop(model, tmp_path, FIRST, "--ctx-size", "512")
    (elsewhere,) = _saved(tmp_path)
    _answer_then_stop(model, tmp_path, OTHER)  # makes the folder of the default settings
    (mine,) = [path for path in _saved(tmp_path) if path.parent != elsewhere.parent]
    shutil.copy(elsewhere, mine.parent / elsewhere.name)
    with worker(model, "--kv-cache-dir", str(tmp_path)) as process:
        assert _complete(process.url, SECOND)["timings"]["cache_n"] == 0


def test_the_size_cap_removes_the_least_recently_used_saves(model: Path, tmp_path: Path) -> None:
    _answer_then_stop(model, tmp_path, FIRST)
    (first,) = _saved(tmp_path)
    cap = str(first.stat().st_size * 3 // 2)  # room for one save, not two
    _answer_then_stop(model, tmp_path, OTHER, "--kv-cache-max", cap)
    (kept,) = _saved(tmp_path)
    assert kept != first
    with worker(model, "--kv-cache-dir", str(tmp_path)) as process:
        assert _complete(process.url, SECOND)["timings"]["cache_n"] == 0


def test_the_size_cap_prunes_only_files_the_store_named_itself(model: Path, tmp_path: Path) -> None:
    # A shared --kv-cache-dir (or a preset that pointed it at $HOME) holds other people's files
    # too: old, large, named *.kv and *.tmp, beside and inside the store's own folders.
    _answer_then_stop(model, tmp_path, FIRST)
    (first,) = _saved(tmp_path)
    size = first.stat().st_size
    yesterday = time.time() - 24 * 3600
    foreign = [
        tmp_path / "notes" / "notes.kv",
        tmp_path / "notes" / "x.tmp",
        tmp_path / "kv-0123456789abcdef" / "notes.kv",  # named like a store folder
        first.parent / "notes.kv",
        first.parent / "x.tmp",
    ]
    own_leftover = first.parent / f".{'0' * 32}.kv.12345.tmp"  # a killed save of ours
    for path in [*foreign, own_leftover]:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x" * size)
        os.utime(path, (yesterday, yesterday))
    _answer_then_stop(model, tmp_path, OTHER, "--kv-cache-max", str(size * 3 // 2))
    assert [path for path in foreign if not path.exists()] == []
    assert not own_leftover.exists()
    assert not first.exists()  # the store's own least recently used save went, as before


def test_a_save_that_cannot_be_written_is_skipped_and_the_stop_goes_on(
    model: Path, tmp_path: Path
) -> None:
    in_the_way = tmp_path / "not-a-folder"
    in_the_way.write_text("a file where the cache folder should be")
    with worker(model, "--kv-cache-dir", str(in_the_way)) as process:
        _complete(process.url, FIRST)
        assert process.stop() == 0
    assert in_the_way.read_text() == "a file where the cache folder should be"


def test_saves_are_readable_by_their_user_only(model: Path, tmp_path: Path) -> None:
    # Each file's tokens detokenize to a caller's prompt; a umask of 022 (a shell's, outside the
    # systemd unit's 0027) must not open them to every local user.
    folder = tmp_path / "cache" / "corral" / "kv"
    umask = os.umask(0o022)
    try:
        _answer_then_stop(model, folder, FIRST)
    finally:
        os.umask(umask)
    (saved,) = _saved(folder)
    created = [saved.parent, folder, folder.parent, folder.parent.parent]
    assert {oct(path.stat().st_mode & 0o777) for path in created} == {"0o700"}
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
