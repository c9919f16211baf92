"""``GET /slots`` and ``POST /slots/{id}?action=…`` against a real worker, answered as
llama-server answers them (tools/server/server-context.cpp, tests/unit/test_slot_save.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.worker_process import WorkerProcess, worker
from worker.cache.slot_files import valid_filename

FIRST = "once upon a time there was a little model that said hello to the world and " * 3
SECOND = FIRST + " then the story goes on with people who find water"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("slot-model") / "slots.gguf")


def _saving_into(model: Path, directory: Path) -> Iterator[WorkerProcess]:
    # Without the disk tier, which would bring an erased slot's cache back from its file.
    flags = ("--slot-save-path", str(directory), "--parallel", "2", "--no-kv-persist")
    with worker(model, *flags) as process:
        yield process


@pytest.fixture
def saving(model: Path, tmp_path: Path) -> Iterator[WorkerProcess]:
    yield from _saving_into(model, tmp_path)


@pytest.fixture(scope="module")
def refusing(model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """One worker for the module's refused actions: none of them saves, restores or erases."""
    yield from _saving_into(model, tmp_path_factory.mktemp("refusals"))


def _complete(url: str, prompt: str, **extra: Any) -> dict[str, Any]:
    body = {"prompt": prompt, "n_predict": 8, "temperature": 0, "ignore_eos": True, **extra}
    answer = httpx.post(f"{url}/completion", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _action(url: str, target: str, body: Any = None) -> httpx.Response:
    return httpx.post(f"{url}/slots/{target}", json=body, timeout=60)


def _error(answer: httpx.Response) -> tuple[int, str, str]:
    error = answer.json()["error"]
    return answer.status_code, error["type"], error["message"]


def test_save_erase_restore_gives_the_tokens_of_an_uninterrupted_run(
    model: Path, saving: WorkerProcess
) -> None:
    with worker(model, "--parallel", "2") as plain:
        _complete(plain.url, FIRST)
        reference = _complete(plain.url, SECOND)
    _complete(saving.url, FIRST)
    saved = _action(saving.url, "0?action=save", {"filename": "first.bin"}).json()
    assert saved["id_slot"] == 0
    assert saved["filename"] == "first.bin"
    assert saved["n_saved"] > 0
    assert saved["n_written"] > 0
    assert "save_ms" in saved["timings"]
    erased = _action(saving.url, "0?action=erase").json()
    assert erased == {"id_slot": 0, "n_erased": saved["n_saved"]}
    restored = _action(saving.url, "0?action=restore", {"filename": "first.bin"}).json()
    assert restored["n_restored"] == saved["n_saved"]
    assert restored["n_read"] == saved["n_written"]
    assert "restore_ms" in restored["timings"]
    resumed = _complete(saving.url, SECOND)
    assert resumed["timings"]["cache_n"] == reference["timings"]["cache_n"] > 0
    assert resumed["content"] == reference["content"]


def test_a_slot_restored_into_another_slot_is_reused(saving: WorkerProcess) -> None:
    _complete(saving.url, FIRST)
    _action(saving.url, "0?action=save", {"filename": "moved.bin"}).raise_for_status()
    _action(saving.url, "0?action=erase").raise_for_status()
    _action(saving.url, "1?action=restore", {"filename": "moved.bin"}).raise_for_status()
    assert _complete(saving.url, SECOND)["timings"]["cache_n"] > 0
    assert httpx.get(f"{saving.url}/slots").json()[1]["n_prompt_tokens_cache"] > 0


def test_erase_makes_the_next_request_prefill_everything(saving: WorkerProcess) -> None:
    first = _complete(saving.url, FIRST)
    for slot in (0, 1):
        _action(saving.url, f"{slot}?action=erase").raise_for_status()
    again = _complete(saving.url, FIRST)
    assert again["timings"]["cache_n"] == 0
    assert again["timings"]["prompt_n"] == first["timings"]["prompt_n"]


def test_slot_ids_wrap_around_as_upstream(saving: WorkerProcess) -> None:
    """llama-server takes the id modulo the slot count, in unsigned arithmetic: of two slots,
    2 and -2 are slot 0, 3 and -1 are slot 1; answers carry the id as given."""
    held = _complete(saving.url, FIRST)  # the first of two empty slots: slot 0
    n_tokens = httpx.get(f"{saving.url}/slots").json()[0]["n_prompt_tokens"]
    assert n_tokens > held["timings"]["prompt_n"]
    for alias in (2, -2):
        saved = _action(saving.url, f"{alias}?action=save", {"filename": "w.bin"}).json()
        assert (saved["id_slot"], saved["n_saved"]) == (alias, n_tokens)
    for named in ("3", "-1", "1abc"):
        erased = _action(saving.url, f"{named}?action=erase").json()
        assert erased["n_erased"] == 0  # slot 1 was never used
    assert _action(saving.url, "-2?action=erase").json() == {"id_slot": -2, "n_erased": n_tokens}


def test_slot_actions_without_a_save_path_are_not_supported(model: Path) -> None:
    with worker(model) as process:
        answer = _action(process.url, "0?action=save", {"filename": "x.bin"})
    assert _error(answer) == (
        501,
        "not_supported_error",
        "This server does not support slots action. Start it with `--slot-save-path`",
    )


@pytest.mark.parametrize(
    ("target", "body", "message"),
    [
        ("abc?action=save", {"filename": "x.bin"}, "Invalid slot ID"),
        ("99999999999?action=save", {"filename": "x.bin"}, "Invalid slot ID"),
        ("0?action=wipe", None, "Invalid action"),
        ("0", None, "Invalid action"),
        ("0?action=save", {"filename": "../escape.bin"}, "Invalid filename"),
        ("0?action=restore", {"filename": "sub/dir.bin"}, "Invalid filename"),
        ("0?action=save", {"filename": ""}, "Invalid filename"),
        (
            "0?action=restore",
            {"filename": "never-saved.bin"},
            "Unable to restore slot: No available space in KV cache or invalid slot save file",
        ),
    ],
)
def test_bad_slot_actions_are_answered_as_upstream(
    refusing: WorkerProcess, target: str, body: Any, message: str
) -> None:
    assert _error(_action(refusing.url, target, body)) == (400, "invalid_request_error", message)


def test_a_save_without_a_filename_is_a_bad_request(refusing: WorkerProcess) -> None:
    # Upstream answers 500 (an uncaught JSON exception); a missing field is the client's fault.
    status, kind, _ = _error(_action(refusing.url, "0?action=save", {"file": "x.bin"}))
    assert (status, kind) == (400, "invalid_request_error")


def test_a_foreign_file_is_refused_and_the_slot_stays_usable(
    saving: WorkerProcess, tmp_path: Path
) -> None:
    (tmp_path / "garbage.bin").write_bytes(b"ggsq" + bytes(64))
    answer = _action(saving.url, "0?action=restore", {"filename": "garbage.bin"})
    assert answer.status_code == 400
    assert _complete(saving.url, FIRST)["timings"]["cache_n"] == 0


def test_slots_lists_every_slot_in_upstream_shape(saving: WorkerProcess) -> None:
    _complete(saving.url, FIRST)
    slots = httpx.get(f"{saving.url}/slots").json()
    assert [slot["id"] for slot in slots] == [0, 1]
    used = next(slot for slot in slots if "id_task" in slot)
    assert used["is_processing"] is False
    assert used["speculative"] is False
    assert used["params"]["temperature"] == 0
    # Idle: the finished task's budget is not reported as still owed (upstream's reset()).
    assert used["next_token"][0] == {
        "has_next_token": False,
        "has_new_line": False,
        "n_remain": -1,
        "n_decoded": 0,
    }
    # The cache holds the prompt and the tokens generated after it.
    assert used["n_prompt_tokens"] > used["n_prompt_tokens_processed"] > 0


def test_no_slots_turns_the_listing_off(model: Path) -> None:
    with worker(model, "--no-slots") as process:
        answer = httpx.get(f"{process.url}/slots")
    assert _error(answer) == (
        501,
        "not_supported_error",
        "This server does not support slots endpoint. Start it with `--slots`",
    )


def test_fail_on_no_slot_answers_503_while_every_slot_generates(model: Path) -> None:
    with worker(model, "--ctx-size", "32768", "--parallel", "1") as process:
        assert httpx.get(f"{process.url}/slots?fail_on_no_slot=1").status_code == 200
        body = {"prompt": FIRST, "n_predict": 30_000, "stream": True, "ignore_eos": True}
        with httpx.stream("POST", f"{process.url}/completion", json=body) as response:
            lines = response.iter_lines()  # kept: dropping the iterator closes the response
            next(line for line in lines if '"content":"' in line)
            answer = httpx.get(f"{process.url}/slots?fail_on_no_slot=1")
    assert _error(answer) == (503, "unavailable_error", "no slot available")


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("slot1.bin", True),
        ("ünïcode.bin", True),
        ("..", False),
        ("a..b", False),
        (".", False),
        ("trailing.", False),
        (" leading", False),
        ("a:b", False),
        ("a\\b", False),
        ("tab\there", False),
        ("x" * 256, False),
        ("fullwidth\uff0estop", False),
    ],
)
def test_filenames_are_checked_as_upstream_checks_them(name: str, valid: bool) -> None:
    assert valid_filename(name) is valid


def test_id_slot_runs_the_request_on_that_slot(saving: WorkerProcess) -> None:
    # As llama-server: the named slot runs it (3 wraps around to 1 of 2), so that slot's cache
    # is the one a save writes.
    for id_slot in (1, 3):
        assert _complete(saving.url, FIRST, id_slot=id_slot)["id_slot"] == 1
    slots = httpx.get(f"{saving.url}/slots").json()
    assert ["id_task" in slot for slot in slots] == [False, True]
    saved = _action(saving.url, "1?action=save", {"filename": "one.bin"}).json()
    assert saved["n_saved"] > 0
    assert _complete(saving.url, FIRST, id_slot=0)["id_slot"] == 0
