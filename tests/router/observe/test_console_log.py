"""The console log at info is one line per request and each lifecycle event once; the rest is
debug, which ``-lv 4`` or ``--verbose`` brings back (docs/operations.md, "Logs"; issue 54).

Read from a real router's stderr (JSON records, one a line) after a model load, a chat, and the
polls the Web UI and monitors make.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.router_process import running_router

CHAT = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
POLLS = ("/models", "/v1/models", "/health", "/activity", "/metrics")


def _log_of_a_session(models_dir: Path, *flags: str) -> list[dict[str, Any]]:
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", *flags]
    with running_router(args) as router:
        for path in POLLS:
            assert router.client.get(path).status_code == 200
        assert router.client.post("/v1/chat/completions", json=CHAT).status_code == 200
        router.wait_for_log("model loaded", model="alpha")
        records = router.records
    return records  # stopped: the whole log, shutdown included


def _access(records: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    return [r for r in records if r.get("logger") == "corral.access" and r.get("path") == path]


def test_at_info_the_log_is_requests_and_lifecycle_once(models_dir: Path) -> None:
    records = _log_of_a_session(models_dir)
    assert all(r.get("level") != "debug" for r in records)
    loaded = [r for r in records if r.get("event") == "model loaded"]
    assert [r.get("source") for r in loaded] == [None]  # the router's line; not the worker's
    assert not [r for r in records if "server process" in str(r.get("event"))]  # uvicorn's
    assert not [r for r in records if "application startup" in str(r.get("event")).lower()]
    for path in POLLS:
        assert not _access(records, path), path
    (chat,) = _access(records, "/v1/chat/completions")
    assert chat["level"] == "info"
    # The worker's relayed lines at info are its own JSON records, never llama.cpp's raw text:
    # every one has fields beyond the model and its source.
    for record in records:
        if record.get("source") == "worker":
            assert set(record) - {"event", "level", "logger", "timestamp", "model", "source"}, (
                record
            )


@pytest.mark.parametrize("flags", [("-lv", "4"), ("--verbose",)])
def test_verbose_brings_the_rest_back_at_debug(models_dir: Path, flags: tuple[str, ...]) -> None:
    records = _log_of_a_session(models_dir, *flags)
    worker_loaded = [
        r for r in records if r.get("event") == "model loaded" and r.get("source") == "worker"
    ]
    assert [r["level"] for r in worker_loaded] == ["debug"]
    banners = [r for r in records if "server process" in str(r.get("event"))]
    assert banners
    assert {r["level"] for r in banners} == {"debug"}
    assert any(r.get("source") == "worker" for r in banners)  # the worker's own, relayed
    for path in POLLS:
        assert [r["level"] for r in _access(records, path)] == ["debug"], path
