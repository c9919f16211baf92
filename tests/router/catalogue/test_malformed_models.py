"""Malformed GGUFs in the model sources (issue 35, M2), over HTTP against a real router: a bad
file is listed with what is wrong with it and answers 422, and never stops a start, a reload,
a SIGHUP reload or anyone else's listing; a huge string in a header is never read whole."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support.files.gguf_mutations import nested_arrays, with_key, write_with_huge_string
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_mmproj import write_tiny_mmproj
from tests.support.router_process import RouterProcess, running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
# The reported attack: a 36 KB header of 3,000 arrays each holding the next.
NESTED = "corrupt header: arrays nested deeper than 4"


def _nested_model(path: Path, base: Path) -> Path:
    path.write_bytes(with_key(base.read_bytes(), "general.nested", nested_arrays(3000)))
    return path


@pytest.fixture(scope="module")
def alpha(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("alpha") / "alpha.gguf", name="alpha")


def _status(router: RouterProcess, name: str) -> dict[str, Any]:
    status: dict[str, Any] = router.models()[name]["status"]
    return status


def _listed_as_bad(router: RouterProcess, name: str, error: str) -> None:
    """Listed as a refused load leaves it (docs/api.md), and a request for it answers 422."""
    status = _status(router, name)
    assert (status["value"], status["failed"], status["reason"]) == ("unloaded", True, "bad_file")
    assert status["error"] == error
    answer = router.client.post("/v1/chat/completions", json={"model": name, **CHAT})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == {
        "code": 422,
        "message": f"model '{name}' failed to load: {error}",
        "type": "invalid_request_error",
    }
    assert _status(router, name) == status  # the same before and after the refused load


def _serves(router: RouterProcess, name: str) -> None:
    assert router.client.post("/v1/chat/completions", json={"model": name, **CHAT}).is_success


def test_a_deeply_nested_header_at_startup_is_listed_with_its_error(
    alpha: Path, tmp_path: Path
) -> None:
    (tmp_path / "alpha.gguf").symlink_to(alpha)
    _nested_model(tmp_path / "nested.gguf", alpha)
    with running_router(["--models-dir", str(tmp_path), "--ctx-size", "256"]) as router:
        _listed_as_bad(router, "nested", NESTED)
        assert router.client.get("/v1/models").is_success
        assert "failed" not in _status(router, "alpha")
        _serves(router, "alpha")


def test_a_bad_file_added_later_is_listed_by_a_reload(alpha: Path, tmp_path: Path) -> None:
    (tmp_path / "alpha.gguf").symlink_to(alpha)
    with running_router(["--models-dir", str(tmp_path), "--ctx-size", "256"]) as router:
        _serves(router, "alpha")
        _nested_model(tmp_path / "nested.gguf", alpha)
        reloaded = router.client.get("/models", params={"reload": "1"})
        assert reloaded.status_code == 200, reloaded.text
        assert {entry["id"] for entry in reloaded.json()["data"]} == {"alpha", "nested"}
        _listed_as_bad(router, "nested", NESTED)
        assert router.client.get("/models", params={"reload": "1"}).is_success  # and again
        _serves(router, "alpha")


def test_a_sighup_reload_with_a_bad_file_keeps_the_router(alpha: Path, tmp_path: Path) -> None:
    (tmp_path / "alpha.gguf").symlink_to(alpha)
    with running_router(["--models-dir", str(tmp_path), "--ctx-size", "256"]) as router:
        # Once a request was answered the services run, SIGHUP's receiver among them: before,
        # SIGHUP would still have its default action.
        assert set(router.models()) == {"alpha"}
        _nested_model(tmp_path / "nested.gguf", alpha)
        router.process.send_signal(signal.SIGHUP)
        router.wait_for_log("models reloaded", models=["alpha", "nested"])
        assert router.process.poll() is None
        _listed_as_bad(router, "nested", NESTED)
        (tmp_path / "later.gguf").symlink_to(alpha)  # and the next SIGHUP still reloads
        router.process.send_signal(signal.SIGHUP)
        router.wait_for_log("models reloaded", models=["alpha", "later", "nested"])
        _serves(router, "later")


def test_a_bad_projector_marks_its_own_model_only(alpha: Path, tmp_path: Path) -> None:
    (tmp_path / "alpha.gguf").symlink_to(alpha)
    seer = tmp_path / "seer"
    seer.mkdir()
    write_tiny_gguf(seer / "seer-Q8_0.gguf", name="seer")
    good = write_tiny_mmproj(tmp_path / "mmproj-good.gguf")
    _nested_model(seer / "mmproj-seer-F32.gguf", good)
    with running_router(["--models-dir", str(tmp_path), "--ctx-size", "256"]) as router:
        for route in ("/models", "/v1/models", "/api/tags"):
            assert router.client.get(route).status_code == 200, route
        for name in ("alpha", "seer"):
            shown = router.client.post("/api/show", json={"model": name})
            assert shown.status_code == 200, shown.text
        _listed_as_bad(router, "seer", f"mmproj-seer-F32.gguf: {NESTED}")
        assert "failed" not in _status(router, "alpha")
        _serves(router, "alpha")


def _peak_rss(router: RouterProcess) -> int:
    """The router's peak resident memory so far (VmHWM), in bytes."""
    status = Path(f"/proc/{router.process.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def test_a_huge_string_in_a_header_is_never_read_whole(alpha: Path, tmp_path: Path) -> None:
    (tmp_path / "alpha.gguf").symlink_to(alpha)
    huge = 256 << 20
    with running_router(["--models-dir", str(tmp_path), "--ctx-size", "256"]) as router:

        def read_everything(name: str) -> None:
            for route in ("/models", "/v1/models", "/api/tags"):
                assert router.client.get(route).status_code == 200, route
            assert router.client.post("/api/show", json={"model": name}).status_code == 200

        read_everything("alpha")  # every code path warmed up: the peak from here on is the file's
        before = _peak_rss(router)
        # A hole, not 256 MiB of disk: read whole, it would be 256 MiB of zeros in memory.
        write_with_huge_string(tmp_path / "big.gguf", alpha.read_bytes(), "general.notes", huge)
        assert os.stat(tmp_path / "big.gguf").st_size > huge
        assert router.client.get("/models", params={"reload": "1"}).status_code == 200
        read_everything("big")
        assert _peak_rss(router) - before < huge // 8
        shown = router.client.post("/api/show", json={"model": "big"}).json()
        assert shown["model_info"]["general.architecture"] == "llama"  # the rest was read
        assert not any(key.startswith("general.notes") for key in shown["model_info"])
        assert "failed" not in _status(router, "big")  # a valid model, however odd
