"""Worker crashes, load failures and router death, with real processes."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gguf
import psutil

from corral.hub.sizes import human_size
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Wait for a state change that has no event to wait on (another process's death)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _gone(pid: int) -> bool:
    # In this sandbox PID 1 does not reap orphans: a dead one lingers as a zombie.
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _status(router: RouterProcess, name: str) -> dict[str, Any]:
    status: dict[str, Any] = router.models()[name]["status"]
    return status


def test_crashed_worker_is_reported_and_restarted(router: RouterProcess) -> None:
    assert router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT}).is_success
    first_pid = router.worker_pids()["alpha"]

    os.kill(first_pid, signal.SIGKILL)
    _wait_for(lambda: _status(router, "alpha")["value"] == "unloaded", "the crash to be seen")

    status = _status(router, "alpha")
    assert status["failed"] is True
    assert status["exit_code"] == 128 + signal.SIGKILL
    assert "SIGKILL" in status["error"]

    again = router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
    assert again.status_code == 200
    assert again.json()["choices"][0]["message"]["content"]
    status = _status(router, "alpha")
    assert status["value"] == "loaded"
    assert "failed" not in status
    assert router.worker_pids()["alpha"] != first_pid


def test_crash_of_one_worker_leaves_the_others_serving(router: RouterProcess) -> None:
    for name in ("alpha", "beta"):
        assert router.client.post("/v1/chat/completions", json={"model": name, **CHAT}).is_success
    pids = router.worker_pids()
    os.kill(pids["alpha"], signal.SIGKILL)
    _wait_for(lambda: _status(router, "alpha")["value"] == "unloaded", "the crash to be seen")
    assert _status(router, "beta")["value"] == "loaded"
    assert router.worker_pids()["beta"] == pids["beta"]
    assert router.client.post("/v1/chat/completions", json={"model": "beta", **CHAT}).is_success


def _weightless_gguf(path: Path) -> None:
    """A well-formed GGUF with no tensors: it passes the router's file check, llama.cpp fails."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_model_that_cannot_load_fails_its_request_with_the_reason(tmp_path: Path) -> None:
    _weightless_gguf(tmp_path / "broken.gguf")
    with running_router(["--models-dir", str(tmp_path)]) as router:
        response = router.client.post("/v1/chat/completions", json={"model": "broken", **CHAT})
        assert response.status_code == 500
        error = response.json()["error"]
        assert error["type"] == "server_error"
        assert "failed to load" in error["message"]

        status = _status(router, "broken")
        assert status["value"] == "unloaded"
        assert status["failed"] is True
        assert status["exit_code"] == 1
        assert "failed to load model" in status["error"]

        # The next request tries again rather than remembering the failure forever.
        assert (
            router.client.post("/v1/chat/completions", json={"model": "broken", **CHAT}).status_code
            == 500
        )
        loads = [r for r in router.records if r.get("event") == "starting worker"]
        assert len(loads) == 2


def test_a_truncated_or_corrupt_file_fails_at_once_saying_what_is_wrong(tmp_path: Path) -> None:
    write_tiny_gguf(tmp_path / "whole.gguf", name="whole")
    data = (tmp_path / "whole.gguf").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[: len(data) // 3])
    (tmp_path / "junk.gguf").write_bytes(b"\x00junk" * 100)
    truncated = (
        f"file is truncated: {human_size(len(data) // 3)} of the {human_size(len(data))} "
        "its header describes"
    )
    expected = {"cut": truncated, "junk": "not a GGUF file: it does not start with 'GGUF'"}
    with running_router(["--models-dir", str(tmp_path)]) as router:
        for name, problem in expected.items():
            # Listed with its problem before any load (docs/api.md), then refused with it.
            status = _status(router, name)
            assert status["failed"] is True
            assert (status["error"], status["reason"]) == (problem, "bad_file")
            response = router.client.post("/v1/chat/completions", json={"model": name, **CHAT})
            assert response.status_code == 422
            message = response.json()["error"]["message"]
            assert message == f"model '{name}' failed to load: {problem}"
            assert _status(router, name) == status
        assert router.client.post(
            "/v1/chat/completions", json={"model": "whole", **CHAT}
        ).is_success
    unusable = [r for r in router.records if r.get("event") == "model file is unusable"]
    assert [(r["model"], r["error"]) for r in unusable] == list(expected.items())
    # No worker was spawned for a bad file: none logged, none exited.
    relayed = {r.get("model") for r in router.records if r.get("source") == "worker"}
    assert relayed == {"whole"}
    exited = [r for r in router.records if r.get("event") == "worker exited" and r.get("code")]
    assert not exited


def test_sigkilled_router_leaves_no_worker_behind(models_dir: Path) -> None:
    router = RouterProcess(["--models-dir", str(models_dir)])
    try:
        for name in ("alpha", "beta"):
            response = router.client.post("/v1/chat/completions", json={"model": name, **CHAT})
            assert response.is_success
        pids = router.worker_pids()
        assert len(pids) == 2
        router.process.send_signal(signal.SIGKILL)
        router.process.wait(timeout=10)
        _wait_for(lambda: all(_gone(pid) for pid in pids.values()), f"workers {pids} to die")
    finally:
        router.stop()


def test_sigterm_stops_every_worker_gracefully(models_dir: Path) -> None:
    router = RouterProcess(["--models-dir", str(models_dir)])
    for name in ("alpha", "beta"):
        assert router.client.post("/v1/chat/completions", json={"model": name, **CHAT}).is_success
    pids = router.worker_pids()
    # uvicorn re-raises the signal once its graceful shutdown is done, as servers conventionally do.
    assert router.stop() == -signal.SIGTERM
    assert all(_gone(pid) for pid in pids.values())
    exits = [r for r in router.records if r.get("event") == "worker exited"]
    assert sorted(r["model"] for r in exits) == ["alpha", "beta"]
    assert all(r["code"] == 0 for r in exits)
