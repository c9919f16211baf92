"""A real router with a spare worker: it takes the first load, is replaced, and is no model."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil

from tests.support.router_process import RouterProcess

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _dead(pid: int) -> bool:
    # In this sandbox PID 1 does not reap orphans: a dead one lingers as a zombie.
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_the_spare_takes_the_load_is_replaced_and_dies_with_the_router(models_dir: Path) -> None:
    router = RouterProcess(["--models-dir", str(models_dir), "--models-spare", "1"])
    try:
        first = router.wait_for_log("spare worker ready", timeout=60)["pid"]
        assert sorted(router.models()) == ["alpha", "beta"]  # the spare is not listed
        reply = router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
        assert reply.status_code == 200, reply.text
        assert router.wait_for_log("handing a model to a spare worker")["pid"] == first
        second = router.wait_for_record(
            lambda r: r.get("event") == "spare worker ready" and r["pid"] != first, timeout=60
        )["pid"]
        models = router.models()
        assert sorted(models) == ["alpha", "beta"]
        assert [m["status"]["value"] for m in models.values()] == ["loaded", "unloaded"]
        children = {child.pid for child in psutil.Process(router.process.pid).children()}
        assert children == {first, second}  # alpha's worker is the spare it was handed to
        router.process.send_signal(signal.SIGKILL)
        router.process.wait(timeout=10)
        deadline = time.monotonic() + 30  # another process's death has no event to wait on
        while not (_dead(first) and _dead(second)):
            assert time.monotonic() < deadline, "the spare or the worker outlived the router"
            time.sleep(0.02)
    finally:
        router.stop()
