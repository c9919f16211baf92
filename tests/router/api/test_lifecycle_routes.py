"""Model lifecycle routes, autoload and ``--models-max``, with real workers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.model_events import EventReader
from tests.support.router_process import RouterProcess, running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


@pytest.fixture
def events(router: RouterProcess) -> Iterator[EventReader]:
    reader = EventReader(router)
    yield reader
    reader.close()


def test_sse_headers_and_load_unload_events(router: RouterProcess, events: EventReader) -> None:
    assert events.response.headers["content-type"].startswith("text/event-stream")
    assert events.response.headers["x-accel-buffering"] == "no"

    assert router.client.post("/models/load", json={"model": "alpha"}).json() == {"success": True}
    events.wait_for("alpha", "model_status", status="loading")
    loaded = events.wait_for("alpha", "status_change", status="loaded")
    assert loaded["data"]["info"]["id"] == "alpha"
    assert router.models()["alpha"]["status"]["value"] == "loaded"

    assert router.client.post("/models/unload", json={"model": "alpha"}).json() == {"success": True}
    events.wait_for("alpha", "status_change", status="unloaded", exit_code=0)
    status = router.models()["alpha"]["status"]
    assert status["value"] == "unloaded"
    assert "failed" not in status


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/models/load", {"model": "nope"}, 404, "not found"),
        ("/models/load", {}, 400, "non-empty"),
        ("/models/unload", {"model": "alpha"}, 400, "not running"),
        ("/models/unload", {"model": "nope"}, 404, "not found"),
    ],
)
def test_load_and_unload_errors(
    shared_router: RouterProcess, path: str, body: dict[str, str], status: int, message: str
) -> None:
    # The module's shared router: no test given it loads a model, so alpha is "not running".
    response = shared_router.client.post(path, json=body)
    assert response.status_code == status
    assert message in response.json()["error"]["message"]


def test_loading_twice_is_400(router: RouterProcess, events: EventReader) -> None:
    router.client.post("/models/load", json={"model": "beta"})
    again = router.client.post("/models/load", json={"model": "beta"})
    assert again.status_code == 400
    assert again.json()["error"]["message"] == "model is already running"


def test_models_max_evicts_the_idle_model(models_dir: Path) -> None:
    args = ["--models-dir", str(models_dir), "--models-max", "1"]
    with running_router(args) as router:
        for name in ("alpha", "beta", "alpha"):
            reply = router.client.post("/v1/chat/completions", json={"model": name, **CHAT})
            assert reply.status_code == 200
            statuses = {k: v["status"]["value"] for k, v in router.models().items()}
            other = "beta" if name == "alpha" else "alpha"
            assert statuses[name] == "loaded"
            assert statuses[other] in ("unloaded",), statuses
        evictions = [r for r in router.records if r.get("event") == "evicting idle model"]
        assert [r["model"] for r in evictions] == ["alpha", "beta"]


def test_no_autoload_refuses_unloaded_models_unless_asked(models_dir: Path) -> None:
    with running_router(["--models-dir", str(models_dir), "--no-models-autoload"]) as router:
        assert router.client.get("/props").json()["models_autoload"] is False
        refused = router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == "model is not loaded"
        assert router.models()["alpha"]["status"]["value"] == "unloaded"

        asked = router.client.post(
            "/v1/chat/completions?autoload=true", json={"model": "alpha", **CHAT}
        )
        assert asked.status_code == 200
        # Once running, it is served without asking.
        plain = router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
        assert plain.status_code == 200


def test_autoload_false_per_request(router: RouterProcess) -> None:
    response = router.client.get("/props", params={"model": "alpha", "autoload": "false"})
    assert response.status_code == 400
    assert router.models()["alpha"]["status"]["value"] == "unloaded"
    proxied = router.client.get("/props", params={"model": "alpha"})
    assert proxied.status_code == 200
    assert proxied.json()["model_alias"] == "alpha"


def test_sleeping_model_is_reported_and_woken_by_a_request(models_dir: Path) -> None:
    args = ["--models-dir", str(models_dir), "--sleep-idle-seconds", "1"]
    with running_router(args) as router:
        events = EventReader(router)
        try:
            first = router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
            assert first.status_code == 200
            events.wait_for("alpha", "status_change", status="sleeping")
            assert router.models()["alpha"]["status"]["value"] == "sleeping"
            reply = router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
            assert reply.status_code == 200
            assert router.models()["alpha"]["status"]["value"] == "loaded"
            # A wake-up is not a new process: the router counted one load only.
            loads = [r for r in router.records if r.get("event") == "starting worker"]
            assert len(loads) == 1
        finally:
            events.close()
