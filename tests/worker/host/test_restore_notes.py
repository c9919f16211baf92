"""A worker's ``restore`` notes on its stdout (docs/protocol.md §1): two for a request the router
named that loads a saved KV cache, here from the disk tier a killed worker left, none for one
it did not name (worker/host/restore_notes.py). The memory tier's are seen through a router in
tests/router/observe/test_activity_restoring.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral.children.protocol import REQUEST_ID_HEADER, RESTORE_STATE, RestoreNote, parse_restore
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.worker_process import WorkerProcess, worker

_WORDS = "once upon a time there was a little model that said hello to the world and then "
_PROMPT = ("story " + _WORDS) * 8
_OTHER = ("water " + _WORDS) * 8


def _complete(url: str, prompt: str, request: str | None = None) -> dict[str, Any]:
    body = {"prompt": prompt, "n_predict": 4, "temperature": 0}
    headers = {REQUEST_ID_HEADER.decode(): request} if request is not None else {}
    answer = httpx.post(f"{url}/completion", json=body, headers=headers, timeout=120)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _notes(process: WorkerProcess) -> list[RestoreNote]:
    return [
        note
        for message in process.states
        if message.state == RESTORE_STATE and (note := parse_restore(message.payload)) is not None
    ]


def test_a_named_request_that_loads_a_saved_cache_is_noted_as_it_begins_and_ends(
    tmp_path: Path,
) -> None:
    model = write_tiny_gguf(tmp_path / "notes.gguf")
    flags = ("--ctx-size", "512", "--parallel", "1", "--kv-cache-dir", str(tmp_path / "kv"))
    with worker(model, *flags) as process:
        first = _complete(process.url, _PROMPT)
        deadline = time.monotonic() + 60
        while not list((tmp_path / "kv").glob("*/*.kv")):  # written in the background
            assert time.monotonic() < deadline, "the writer wrote nothing"
            time.sleep(0.02)
    # Leaving the block SIGKILLs the worker: the next one finds the file.
    turn = _PROMPT + first["content"] + " the end"
    with worker(model, *flags) as process:
        sent = time.time()
        resumed = _complete(process.url, turn, "r7")  # from the disk tier
        _complete(process.url, _OTHER)  # takes the slot: the turn's cache becomes a copy
        unnamed = _complete(process.url, turn + " again")  # the copy, for a request not named
        _complete(process.url, _OTHER + " again", "r9")  # the other's copy, named
        assert process.stop() == 0  # its stdout ends: every line it wrote can be read
        with pytest.raises(AssertionError, match="closed stdout"):
            process.read_until("none")
    assert unnamed["timings"]["restored_n"] > 0
    notes = _notes(process)
    expected = [("r7", False), ("r7", True), ("r9", False), ("r9", True)]
    assert [(note.request, note.done) for note in notes] == expected
    assert (notes[0].tokens, notes[1].tokens) == (0, resumed["timings"]["restored_n"])
    assert notes[1].tokens > 0
    times = [note.at for note in notes]
    assert sent <= times[0] <= times[1] <= times[2] <= times[3] <= time.time()
