"""The cluster, the router and the two measurements of ``python -m bench.cluster`` (see its
``__init__``): :func:`run` returns the summary the report prints."""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from bench.support.servers import log
from bench.support.streams import one_stream
from router.cluster.reports import MEMORY_MAX_ENV
from tests.support.remote.ray_cluster import RayCluster, loopback_namespace
from tests.support.router_process import RouterProcess, running_router

TARGET_RATIO = 0.97
TARGET_FAILOVER_S = 15.0  # issue 52: the next request for a dead node's model answers within
HEAD_MEMORY_MAX = "1G"  # room for near, less than the node far has
FULL = {"max_tokens": 128, "rounds": 3, "blocks": 2}
QUICK = {"max_tokens": 16, "rounds": 1, "blocks": 1}
NEAR, FAR = "near", "far"
_LOAD_TIMEOUT = 300.0
_FAILOVER_GIVE_UP = 120.0


def _load_on(router: RouterProcess, model: str, node: str) -> None:
    """Load ``model`` and check that the placement put it on ``node``."""
    router.client.post("/models/load", json={"model": model}, timeout=60).raise_for_status()
    router.wait_for_log("model loaded", model=model, timeout=_LOAD_TIMEOUT)
    placed = router.models()[model].get("node")
    if placed != node:
        raise RuntimeError(f"{model} loaded on {placed!r}, not {node!r}: the A/B is not across")


async def _decode(url: str, settings: dict[str, int]) -> dict[str, Any]:
    """Each model's median decode rate over its turns, ABBA, ``rounds`` streams a turn."""
    rates: dict[str, list[float]] = {NEAR: [], FAR: []}
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        for model in rates:
            await one_stream(client, 8, model)  # warm-up
        for model in [NEAR, FAR, FAR, NEAR] * settings["blocks"]:
            log(f"{model}: {settings['rounds']} stream(s) ...")
            for _ in range(settings["rounds"]):
                result = await one_stream(client, settings["max_tokens"], model)
                rates[model].append((result.tokens - 1) / result.decode_s)
    near, far = (statistics.median(rates[m]) for m in (NEAR, FAR))
    ratio = far / near
    return {
        "near_tok_s": near,
        "far_tok_s": far,
        "ratio": ratio,
        "streams_each": len(rates[NEAR]),
        "target_met": ratio >= TARGET_RATIO,
    }


def _failover(ray: RayCluster, router: RouterProcess) -> dict[str, Any]:
    """Seconds from the far node's death to the next 200 for ``far``, and what came before."""
    body = {"model": FAR, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    refused: list[int] = []
    killed = time.monotonic()
    ray.kill_node(FAR)
    log("far's node killed; asking for far until it answers ...")
    with httpx.Client(base_url=router.url, timeout=_FAILOVER_GIVE_UP) as client:
        while time.monotonic() - killed < _FAILOVER_GIVE_UP:
            try:
                status = client.post("/v1/chat/completions", json=body).status_code
            except httpx.TransportError:
                status = 0
            if status == 200:
                seconds = time.monotonic() - killed
                break
            refused.append(status)
            time.sleep(0.1)  # an error answers at once: not a busy loop against the router
        else:
            raise RuntimeError(f"no 200 for {FAR} within {_FAILOVER_GIVE_UP} s: {refused}")
    return {
        "seconds": seconds,
        "answered_from": router.models()[FAR].get("node"),
        "errors_before": refused,
        "target_met": seconds <= TARGET_FAILOVER_S,
    }


def run(model: Path, serve_args: list[str], settings: dict[str, int], tmp: Path) -> Any:
    models = tmp / "models"  # a path every node sees: one machine
    models.mkdir()
    for name in (NEAR, FAR):
        (models / f"{name}.gguf").symlink_to(model.resolve())
    with loopback_namespace():
        ray = RayCluster(tmp)
        try:
            log("starting the head ...")
            ray.add_node("head", {MEMORY_MAX_ENV: HEAD_MEMORY_MAX})
            ray.wait_for_nodes(1)
            args = ["--cluster", f"ray://{ray.address}", "--models-dir", str(models)]
            with running_router([*args, *serve_args]) as router:
                router.wait_for_log("node ready", node="head", timeout=120)
                log(f"loading {NEAR} on the head ...")
                _load_on(router, NEAR, "head")
                log("starting node far ...")
                ray.add_node(FAR)
                router.wait_for_log("node ready", node=FAR, timeout=120)
                log(f"loading {FAR} on node far ...")
                _load_on(router, FAR, FAR)
                decode = asyncio.run(_decode(router.url, settings))
                failover = _failover(ray, router)
        finally:
            ray.stop()
    return {"model": model.name, "serve_args": serve_args, "decode": decode, "failover": failover}
