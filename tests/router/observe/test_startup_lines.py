"""What ``corral serve`` says at startup about what it was given: no models, and the keys read.

Read from a real router's stderr: a router with nothing to serve answers every request 404, so
its log must say why; a key file's keys are confirmed by count and scope, never printed.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import running_router

ADMIN, INFERENCE = "startup-admin-key", ("startup-inf-1", "startup-inf-2", "startup-inf-3")


def test_a_router_with_nothing_to_serve_says_how_to_give_it_models(tmp_path: Path) -> None:
    with running_router(["--models-dir", str(tmp_path)]) as router:
        record = router.wait_for_log("corral listening")
        warning = next(r for r in router.records if str(r["event"]).startswith("no models"))
    assert warning["level"] == "warning"
    assert "--models-dir, -m or -hf" in warning["event"]
    assert warning["models_dir"] == str(tmp_path)
    assert router.records.index(warning) < router.records.index(record)  # before it serves


def test_the_keys_read_are_counted_by_scope_and_never_shown(tmp_path: Path) -> None:
    write_tiny_gguf(tmp_path / "alpha.gguf", name="alpha")
    keys = tmp_path / "keys"
    keys.write_text(
        f"# one admin, three inference\n{ADMIN} admin\n"
        + "".join(f"{key} inference rpm=60\n" for key in INFERENCE),
        encoding="utf-8",
    )
    with running_router(["--models-dir", str(tmp_path), "--api-key-file", str(keys)]) as router:
        router.wait_for_log("corral listening")
        record = router.wait_for_log("API keys read")
        log = router.log_text()
    assert record["keys"] == "4: 1 admin, 3 inference"
    assert record["level"] == "info"
    assert not any(r["event"].startswith("no models") for r in router.records)
    for key in (ADMIN, *INFERENCE):
        assert key not in log
