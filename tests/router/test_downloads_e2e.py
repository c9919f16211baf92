"""Downloads and removals end to end: a real router, its download children, real workers, the
real huggingface_hub client and a fake hub on loopback."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.fakes.fake_hub import FakeHub, HubFile
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_mmproj import write_tiny_mmproj
from tests.support.model_events import EventReader
from tests.support.router_process import RouterProcess, running_router

REPO = "acme/tiny-GGUF"
Q4, Q8 = f"{REPO}:Q4_K_M", f"{REPO}:Q8_0"
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


class DownloadEvents(EventReader):
    def wait_until(self, what: str, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first event matching ``predicate``, waiting for it to arrive."""

        def match() -> dict[str, Any] | None:
            return next((event for event in self.events if predicate(event)), None)

        with self._new:
            assert self._new.wait_for(lambda: match() is not None, timeout=60), (what, self.events)
        found = match()
        assert found is not None
        return found

    def bytes_on_disk(self, model: str) -> dict[str, Any]:
        """The first progress event saying some bytes of ``model`` are written."""

        def some_bytes(event: dict[str, Any]) -> bool:
            progress = (event.get("data") or {}).get("progress", {})
            return (
                event["event"] == "download_progress"
                and event["model"] == model
                and any(item["done"] > 0 for item in progress.values())
            )

        return self.wait_until(f"bytes of {model} on disk", some_bytes)


@pytest.fixture(scope="module")
def payloads(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    directory = tmp_path_factory.mktemp("hub-payloads")
    # The projector is a real one: the worker loads a repository's projector with its model.
    paths = [write_tiny_gguf(directory / f"m{seed}.gguf", seed=seed) for seed in range(2)]
    paths.append(write_tiny_mmproj(directory / "mmproj.gguf"))
    return [path.read_bytes() for path in paths]


@pytest.fixture
def env(hub: FakeHub, cache: Path, tmp_path: Path) -> dict[str, str]:
    # HF_HOME too: huggingface_hub must not find a developer's real token or settings.
    return {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}


def _serve(models_dir: Path, env: dict[str, str]) -> Iterator[RouterProcess]:
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "512"], env) as process:
        yield process


@pytest.fixture
def router(models_dir: Path, env: dict[str, str]) -> Iterator[RouterProcess]:
    yield from _serve(models_dir, env)


@pytest.fixture(scope="module")
def refusing_router(
    models_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RouterProcess]:
    """One router for the module's refusals: they start no download and remove nothing."""
    home = tmp_path_factory.mktemp("refusals")
    yield from _serve(models_dir, {"HF_HUB_CACHE": str(home / "hub"), "HF_HOME": str(home / "hf")})


@pytest.fixture
def events(router: RouterProcess) -> Iterator[DownloadEvents]:
    reader = DownloadEvents(router)
    yield reader
    reader.close()


def repo_dir(cache: Path, repo: str = REPO) -> Path:
    return cache / ("models--" + repo.replace("/", "--"))


def blob_files(cache: Path, repo: str = REPO) -> list[str]:
    blobs = repo_dir(cache, repo) / "blobs"
    return sorted(path.name for path in blobs.iterdir()) if blobs.is_dir() else []


def start_download(router: RouterProcess, model: str) -> None:
    assert router.client.post("/models", json={"model": model}).json() == {"success": True}


def test_download_reports_progress_takes_no_slot_then_the_model_answers(
    hub: FakeHub, models_dir: Path, env: dict[str, str], cache: Path, payloads: list[bytes]
) -> None:
    q4, q8, projector = payloads
    paused = HubFile(q4, pause_after=64 * 1024)
    hub.add_repo(
        REPO, {"tiny-Q4_K_M.gguf": paused, "tiny-Q8_0.gguf": q8, "mmproj-tiny-F16.gguf": projector}
    )
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--models-max", "1"]
    with running_router(args, env) as router:
        events = DownloadEvents(router)
        assert router.client.post(
            "/v1/chat/completions", json={"model": "alpha", **CHAT}
        ).is_success

        start_download(router, REPO)
        events.wait_for(REPO, "model_status", status="downloading")
        events.bytes_on_disk(REPO)
        listed = router.models()[REPO]
        assert (listed["status"]["value"], listed["source"]) == ("downloading", "cache")
        for again in (REPO, Q4, f"{REPO}:q4_k_m"):
            refused = router.client.post("/models", json={"model": again})
            assert refused.status_code == 400
            assert "already being downloaded" in refused.json()["error"]["message"]
        hub.release()

        finished = events.wait_for(REPO, "download_finished")
        assert finished["data"] == {"id": Q4}
        events.wait_for("*", "models_reload")
        last = [e for e in events.events if e["event"] == "download_progress"][-1]
        progress = {url.rsplit("/", 1)[1]: item for url, item in last["data"]["progress"].items()}
        assert progress == {
            "tiny-Q4_K_M.gguf": {"done": len(q4), "total": len(q4)},
            "mmproj-tiny-F16.gguf": {"done": len(projector), "total": len(projector)},
        }
        models = router.models()
        assert REPO not in models
        assert (models[Q4]["source"], models[Q4]["can_remove"]) == ("cache", True)
        assert Q8 not in models
        assert models["alpha"]["status"]["value"] == "loaded"  # the download evicted nobody
        events.close()

        reply = router.client.post("/v1/chat/completions", json={"model": Q4, **CHAT})
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"]
    assert hub.transfers_of(f"{REPO}/tiny-Q8_0.gguf") == []


def test_cancel_keeps_the_partial_and_the_next_download_resumes_from_it(
    hub: FakeHub, router: RouterProcess, events: DownloadEvents, cache: Path, payloads: list[bytes]
) -> None:
    model = payloads[0]
    hub.add_repo(REPO, {"tiny-Q4_K_M.gguf": HubFile(model, pause_after=100_000)})
    sha256 = hub.file(REPO, "tiny-Q4_K_M.gguf").sha256
    start_download(router, REPO)
    events.bytes_on_disk(REPO)

    # Cancelled by the name it will have, not the one it was asked for.
    assert router.client.post("/models/unload", json={"model": Q4}).json() == {"success": True}
    failed = events.wait_for(REPO, "download_failed")
    assert "cancelled" in failed["data"]["error"]
    assert REPO not in router.models()
    partial = repo_dir(cache) / "blobs" / f"{sha256}.incomplete"
    kept = partial.stat().st_size
    assert 0 < kept <= 100_000
    hub.release()

    start_download(router, REPO)
    events.wait_for(REPO, "download_finished")
    first, second = hub.transfers_of(f"{REPO}/tiny-Q4_K_M.gguf")
    assert first.start == 0
    assert (second.start, second.sent) == (kept, len(model) - kept)
    assert [r.range for r in hub.requests if r.path.startswith("/lfs/")][-1] == f"bytes={kept}-"
    assert blob_files(cache) == [sha256]
    assert Q4 in router.models(), router.log_text()


def test_a_router_killed_mid_download_leaves_a_partial_the_next_router_resumes(
    hub: FakeHub, models_dir: Path, env: dict[str, str], cache: Path, payloads: list[bytes]
) -> None:
    model = payloads[0]
    hub.add_repo(REPO, {"tiny-Q8_0.gguf": HubFile(model, pause_after=100_000)})
    sha256 = hub.file(REPO, "tiny-Q8_0.gguf").sha256
    args = ["--models-dir", str(models_dir)]
    with running_router(args, env) as first:
        events = DownloadEvents(first)
        start_download(first, Q8)
        events.bytes_on_disk(Q8)
        children = psutil.Process(first.process.pid).children()
        [child] = [c for c in children if "downloads" in c.cmdline()]
        first.process.kill()
        events.close()
        _, alive = psutil.wait_procs([child], timeout=30)  # its parent-death signal kills it
        assert alive == []
    hub.release()
    kept = (repo_dir(cache) / "blobs" / f"{sha256}.incomplete").stat().st_size
    assert kept > 0

    with running_router(args, env) as second:
        events = DownloadEvents(second)
        start_download(second, Q8)
        events.wait_for(Q8, "download_finished")
        events.close()
        resumed = hub.transfers_of(f"{REPO}/tiny-Q8_0.gguf")[-1]
        assert (resumed.start, resumed.sent) == (kept, len(model) - kept)
        assert Q8 in second.models()


def test_a_corrupt_download_fails_and_leaves_no_model(
    hub: FakeHub, router: RouterProcess, events: DownloadEvents, cache: Path, payloads: list[bytes]
) -> None:
    bad = "acme/bad-GGUF"
    hub.add_repo(bad, {"bad-Q4_K_M.gguf": HubFile(payloads[0], corrupt=True)})
    start_download(router, bad)
    failed = events.wait_for(bad, "download_failed")
    assert "sha256 mismatch" in failed["data"]["error"]
    assert "removed" in failed["data"]["error"]
    status = events.wait_for(bad, "status_change", status="downloaded")
    assert status["data"]["error"] == failed["data"]["error"]
    models = router.models()
    assert f"{bad}:Q4_K_M" not in models
    # Listed with its reason until the next reload, as upstream keeps a finished download.
    assert models[bad]["status"] == {
        "value": "downloaded",
        "args": models[bad]["status"]["args"],
        "progress": models[bad]["status"]["progress"],
        "failed": True,
        "error": failed["data"]["error"],
    }
    assert blob_files(cache, bad) == []
    assert bad not in router.client.get("/models", params={"reload": "1"}).text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "tiny"}, "invalid model 'tiny': expected <user>/<model>[:quant]"),
        ({"model": "acme/tiny/GGUF"}, "invalid model"),
        ({"model": "acme/tiny:"}, "is not a quant tag"),
        ({"model": "../../etc/passwd"}, "invalid model"),
        ({"model": "alpha"}, "invalid model"),
        ({}, "model must be a non-empty string"),
    ],
)
def test_malformed_downloads_are_refused(
    refusing_router: RouterProcess, body: dict[str, str], message: str
) -> None:
    response = refusing_router.client.post("/models", json=body)
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        ("acme/missing-GGUF", "repository 'acme/missing-GGUF' not found on the hub"),
        (f"{REPO}:Q2_K", "no GGUF model with tag Q2_K (available: Q4_K_M)"),
    ],
)
def test_unknown_repositories_and_tags_fail_with_the_reason(
    hub: FakeHub,
    router: RouterProcess,
    events: DownloadEvents,
    payloads: list[bytes],
    model: str,
    reason: str,
) -> None:
    hub.add_repo(REPO, {"tiny-Q4_K_M.gguf": payloads[0]})
    start_download(router, model)
    failed = events.wait_for(model, "download_failed")
    assert reason in failed["data"]["error"]
    assert router.models()[model]["status"]["error"] == failed["data"]["error"]


def test_offline_still_downloads_when_asked_to(
    hub: FakeHub, models_dir: Path, env: dict[str, str], payloads: list[bytes]
) -> None:
    # As llama-server: --offline stops implicit fetches (-hf at startup), not POST /models.
    hub.add_repo(REPO, {"tiny-Q4_K_M.gguf": payloads[0]})
    with running_router(["--models-dir", str(models_dir), "--offline"], env) as router:
        events = DownloadEvents(router)
        start_download(router, REPO)
        assert events.wait_for(REPO, "download_finished")["data"] == {"id": Q4}
        events.close()
        assert router.models()[Q4]["source"] == "cache"
    assert hub.transfers_of(f"{REPO}/tiny-Q4_K_M.gguf")


def test_delete_removes_one_tag_and_keeps_the_others(
    hub: FakeHub, router: RouterProcess, events: DownloadEvents, cache: Path, payloads: list[bytes]
) -> None:
    q4, q8, projector = payloads
    commit = hub.add_repo(
        REPO, {"tiny-Q4_K_M.gguf": q4, "tiny-Q8_0.gguf": q8, "mmproj-tiny-F16.gguf": projector}
    )
    start_download(router, Q4)
    start_download(router, Q8)  # several at once
    events.wait_for(Q4, "download_finished")
    events.wait_for(Q8, "download_finished")
    models = router.client.get("/models", params={"reload": "1"}).json()["data"]
    assert {Q4, Q8} <= {model["id"] for model in models}
    refused = router.client.post("/models", json={"model": f"{REPO}:q8_0"})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == f"model '{REPO}:Q8_0' already exists"
    reply = router.client.post("/v1/chat/completions", json={"model": Q8, **CHAT})
    assert reply.is_success, (reply.text, router.log_text())

    assert router.client.delete("/models", params={"model": Q8}).json() == {"success": True}
    events.wait_for(Q8, "status_change", status="unloaded")
    events.wait_for(Q8, "model_remove")
    models_after = router.models()
    assert Q8 not in models_after
    assert models_after[Q4]["status"]["value"] == "unloaded"
    snapshot = repo_dir(cache) / "snapshots" / commit
    assert sorted(path.name for path in snapshot.iterdir()) == [
        "mmproj-tiny-F16.gguf",
        "tiny-Q4_K_M.gguf",
    ]
    sha = {
        name: hub.file(REPO, name).sha256 for name in ("tiny-Q4_K_M.gguf", "mmproj-tiny-F16.gguf")
    }
    assert blob_files(cache) == sorted(sha.values())
    assert router.client.post("/v1/chat/completions", json={"model": Q4, **CHAT}).is_success

    assert router.client.delete("/models", params={"model": Q4}).json() == {"success": True}
    assert not repo_dir(cache).exists()


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ({"model": "alpha"}, 400, "not removable"),
        ({"model": "acme/nothing:Q8_0"}, 404, "not found"),
        ({}, 400, "model must be a non-empty string"),
    ],
)
def test_delete_refuses_what_is_not_a_cache_model(
    refusing_router: RouterProcess,
    models_dir: Path,
    query: dict[str, str],
    status: int,
    message: str,
) -> None:
    response = refusing_router.client.delete("/models", params=query)
    assert response.status_code == status
    assert message in response.json()["error"]["message"]
    assert (models_dir / "alpha.gguf").is_file()


def test_delete_while_downloading_cancels_it(
    hub: FakeHub, router: RouterProcess, events: DownloadEvents, payloads: list[bytes]
) -> None:
    hub.add_repo(REPO, {"tiny-Q4_K_M.gguf": HubFile(payloads[0], pause_after=50_000)})
    start_download(router, REPO)
    events.bytes_on_disk(REPO)
    assert router.client.delete("/models", params={"model": REPO}).json() == {"success": True}
    events.wait_for(REPO, "download_failed")
    events.wait_for(REPO, "model_remove")
    assert REPO not in router.models()


def test_the_hub_token_reaches_download_children_only(
    hub: FakeHub, models_dir: Path, env: dict[str, str], payloads: list[bytes]
) -> None:
    hub.add_repo(REPO, {"tiny-Q4_K_M.gguf": payloads[0]})
    args = ["--models-dir", str(models_dir), "--hf-token", "hf_from_flag"]
    with running_router(args, {**env, "HF_TOKEN": "hf_from_env"}) as router:
        events = DownloadEvents(router)
        start_download(router, REPO)
        events.wait_for(REPO, "download_finished")
        events.close()
        to_hub = {r.authorization for r in hub.requests if "/acme/" in r.path}
        to_cdn = {r.authorization for r in hub.requests if r.path.startswith("/lfs/")}
        assert (to_hub, to_cdn) == ({"Bearer hf_from_flag"}, {None})

        assert router.client.post(
            "/v1/chat/completions", json={"model": "alpha", **CHAT}
        ).is_success
        [worker] = [
            p for p in psutil.Process(router.process.pid).children() if "worker" in p.cmdline()
        ]
        assert "HF_TOKEN" not in worker.environ()
        assert "hf_from" not in " ".join(worker.cmdline())


def test_startup_sweeps_partials_untouched_for_a_day(
    models_dir: Path, env: dict[str, str], cache: Path
) -> None:
    blobs = repo_dir(cache) / "blobs"
    blobs.mkdir(parents=True)
    stale, fresh = blobs / f"{'1' * 64}.incomplete", blobs / f"{'2' * 64}.incomplete"
    for path, age in ((stale, 2 * 86400), (fresh, 3600)):
        path.write_bytes(b"partial")
        os.utime(path, (time.time() - age, time.time() - age))
    with running_router(["--models-dir", str(models_dir)], env) as router:
        record = router.wait_for_log("removed stale partial downloads")
        assert record["files"] == [str(stale)]
    assert not stale.exists()
    assert fresh.exists()
