"""The disk tier behind the prompt cache (docs/serving.md, "KV cache across restarts"): what a
worker wrote in the background is found by the next one however the first one stopped.

Real workers on the tiny word-vocabulary model (the bundled SmolLM2 where a write must take
long enough to be caught in the middle), killed with SIGKILL as a crash or the watchdog would.
Greedy decoding on the same KV bits gives the same tokens, so a restore is compared with an
uninterrupted run token for token. The writer works in the background: a test waits for the
files it needs before it kills.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.files.bundled_model import bundled_model
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_lora import write_tiny_lora
from tests.support.worker_process import worker

_WORDS = "once upon a time there was a little model that said hello to the world and then "
# Four conversations of an agent (main context, summary, sub-agents), on the word vocabulary.
OPENINGS = [(word + " " + _WORDS) * 8 for word in ("people", "water", "story", "day")]
_FLAGS = ("--ctx-size", "512", "--metrics")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("kv-disk-model") / "kv.gguf")


def _complete(
    url: str, prompt: str, n_predict: int = 8, scope: str | None = None, **extra: Any
) -> dict[str, Any]:
    """``scope``: the cache scope the request names, as the router sends a key's."""
    body = {"prompt": prompt, "n_predict": n_predict, "temperature": 0, "ignore_eos": True}
    body.update(extra)
    headers = {"X-Corral-Cache-Scope": scope} if scope is not None else {}
    answer = httpx.post(f"{url}/completion", json=body, headers=headers, timeout=120)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _next_turn(opening: str, answer: dict[str, Any]) -> str:
    """A conversation's next prompt: the earlier one, the answer, a new message."""
    return opening + str(answer["content"]) + " the end"


def _saved(folder: Path) -> list[Path]:
    return sorted(folder.glob("*/*.kv"))


def _until(condition: Callable[[], bool], timeout: float = 60) -> None:
    """Poll for what the background writer does (the test's only way to see it)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the writer did not get there"
        time.sleep(0.02)


def _cached_share(answer: dict[str, Any]) -> float:
    timings = answer["timings"]
    cached, read = int(timings["cache_n"]), int(timings["prompt_n"])
    return cached / (cached + read)


def _metric(url: str, line_start: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    (line,) = [line for line in text.splitlines() if line.startswith(line_start + " ")]
    return float(line.split()[-1])


def test_after_a_sigkill_the_conversation_comes_back_from_disk(model: Path, tmp_path: Path) -> None:
    opening = OPENINGS[0]
    with worker(model, *_FLAGS, "--no-kv-persist") as process:
        first = _complete(process.url, opening)
        reference = _complete(process.url, _next_turn(opening, first))
    with worker(model, *_FLAGS, "--kv-cache-dir", str(tmp_path)) as process:
        assert _complete(process.url, opening)["content"] == first["content"]
        _until(lambda: len(_saved(tmp_path)) == 1)
        assert _metric(process.url, "corral_kv_cache_files_written_total") == 1
    # Leaving the block SIGKILLs the worker: nothing saved at a stop, only what was written.
    with worker(model, *_FLAGS, "--kv-cache-dir", str(tmp_path)) as process:
        resumed = _complete(process.url, _next_turn(opening, first))
        assert _metric(process.url, 'corral_kv_cache_hits_total{tier="disk"}') == 1
    assert _cached_share(resumed) >= 0.95
    assert resumed["timings"]["cache_n"] == reference["timings"]["cache_n"]
    # The slot held nothing: every cached token came back from the file, and the answer says so.
    assert resumed["timings"]["restored_n"] == resumed["timings"]["cache_n"]
    assert "restored_n" not in reference["timings"]  # the slot's own cache: nothing restored
    assert resumed["content"] == reference["content"]


def _reads(url: str) -> tuple[float, float]:
    """States read for the disk tier: at idle moments, and between decode steps."""
    name = "corral_kv_cache_state_reads_total"
    return _metric(url, name + '{moment="idle"}'), _metric(url, name + '{moment="busy"}')


def test_a_state_is_read_once_no_stream_generates_never_between_their_steps(
    model: Path, tmp_path: Path
) -> None:
    flags = (*_FLAGS, "--parallel", "2", "--context-shift", "--kv-cache-dir", str(tmp_path))
    endless = {"prompt": OPENINGS[0], "n_predict": -1, "ignore_eos": True, "stream": True}
    with worker(model, *flags) as process:
        with httpx.stream("POST", f"{process.url}/completion", json=endless, timeout=120) as long:
            lines = long.iter_lines()  # kept: a dropped iterator would close the stream
            assert next(line for line in lines if line.startswith("data: "))
            # A request ends in the other slot while the endless stream decodes: reading its
            # state then would pause the stream, so it waits.
            _complete(process.url, OPENINGS[1])
            assert _reads(process.url) == (0, 0)
            assert _saved(tmp_path) == []
        # Leaving the block cancels the stream: nothing generates, both states are read.
        _until(lambda: _reads(process.url) == (2, 0) and len(_saved(tmp_path)) == 2)


def test_four_interleaved_conversations_on_one_slot_all_come_back(
    model: Path, tmp_path: Path
) -> None:
    flags = (*_FLAGS, "--parallel", "1", "--kv-cache-dir", str(tmp_path))
    with worker(model, *flags) as process:
        firsts = [_complete(process.url, opening) for opening in OPENINGS]
        # Each one took the slot from the one before, which became a copy in memory: all four
        # are on disk, not only the newest.
        _until(lambda: len(_saved(tmp_path)) == 4)
    with worker(model, *flags) as process:
        turns = [
            _complete(process.url, _next_turn(opening, first))
            for opening, first in zip(OPENINGS, firsts, strict=True)
        ]
    assert [_cached_share(turn) >= 0.95 for turn in turns] == [True] * 4


def test_a_worker_killed_while_writing_leaves_a_temporary_file_that_is_never_read(
    tmp_path: Path,
) -> None:
    smol = bundled_model()
    # ~450 tokens: a state of ~10 MB, long enough to write that a poll catches it half done.
    prompt = "Tell me about the history of the river valley and its old mills. " * 32
    flags = ("--ctx-size", "768", "--parallel", "1")
    caught: list[Path] = []
    for attempt in range(3):  # usually caught in the first; a busy machine may lose the race
        folder = tmp_path / str(attempt)
        with worker(smol, *flags, "--kv-cache-dir", str(folder)) as process:
            first = _complete(process.url, prompt, n_predict=4)
            deadline = time.monotonic() + 60
            while not _saved(folder) and time.monotonic() < deadline:
                if list(folder.glob("*/.*.tmp")):
                    os.killpg(process.process.pid, signal.SIGKILL)
                    process.process.wait()
                    break
        caught = [] if _saved(folder) else list(folder.glob("*/.*.tmp"))
        if caught:
            break
    assert caught, "no write was caught in the middle"
    with worker(smol, *flags, "--kv-cache-dir", str(folder)) as process:
        again = _complete(process.url, prompt, n_predict=4)
    assert again["timings"]["cache_n"] == 0  # the partial file was not read: a full prefill
    assert again["content"] == first["content"]
    assert [path for path in caught if not path.exists()] == []  # left until it is stale


def test_the_cap_evicts_the_least_recently_used_file(model: Path, tmp_path: Path) -> None:
    with worker(model, *_FLAGS, "--kv-cache-dir", str(tmp_path / "sizing")) as process:
        _complete(process.url, OPENINGS[0])
        _until(lambda: len(_saved(tmp_path / "sizing")) == 1)
    (sized,) = _saved(tmp_path / "sizing")
    cap = str(sized.stat().st_size * 5 // 2)  # room for two files, not three
    folder = tmp_path / "capped"
    with worker(model, *_FLAGS, "--kv-cache-dir", str(folder), "--kv-cache-max", cap) as process:
        _complete(process.url, OPENINGS[0])
        _until(lambda: len(_saved(folder)) == 1)
        (oldest,) = _saved(folder)
        for opening in OPENINGS[1:3]:
            _complete(process.url, opening)
        _until(lambda: not oldest.exists() and len(_saved(folder)) == 2)


def test_a_cache_computed_under_adapter_scales_persists_for_those_scales_only(
    model: Path, tmp_path: Path
) -> None:
    adapter = write_tiny_lora(tmp_path / "adapter.gguf", model)
    folder = tmp_path / "kv"
    flags = (*_FLAGS, "--lora", str(adapter), "--kv-cache-dir", str(folder))
    opening = OPENINGS[1]
    half: dict[str, Any] = {"lora": [{"id": 0, "scale": 0.5}]}
    with worker(model, *flags) as process:
        _complete(process.url, opening, **half)
        _until(lambda: len(_saved(folder)) == 1)
    with worker(model, *flags) as process:
        # The adapter's answer is not words: the next prompt only extends the opening.
        other_scales = _complete(process.url, opening + " the end")
        same_scales = _complete(process.url, opening + " the end", **half)
    assert other_scales["timings"]["cache_n"] == 0  # scale 1: the file's scales differ
    assert _cached_share(same_scales) >= 0.95


def test_a_cache_saved_for_one_scope_is_restored_for_that_scope_only(
    model: Path, tmp_path: Path
) -> None:
    """docs/security.md, "Another member of the team": another key's file is never restored,
    even after a kill, and a key's own conversation still comes back."""
    flags = (*_FLAGS, "--kv-cache-dir", str(tmp_path))
    opening = OPENINGS[2]
    with worker(model, *flags) as process:
        _complete(process.url, opening, scope="key-a")
        _until(lambda: len(_saved(tmp_path)) == 1)
    with worker(model, *flags) as process:  # the first was SIGKILLed: only its file is left
        other_key = _complete(process.url, opening + " the end", scope="key-b")
        no_key = _complete(process.url, opening + " the end")
        same_key = _complete(process.url, opening + " the end", scope="key-a")
    assert other_key["timings"]["cache_n"] == 0
    assert no_key["timings"]["cache_n"] == 0  # the default scope is a scope of its own
    assert _cached_share(same_key) >= 0.95
    assert same_key["timings"]["restored_n"] == same_key["timings"]["cache_n"]
