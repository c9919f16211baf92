"""Corral on a Ray cluster: ``python -m bench.cluster [--quick] [--json] [-- SERVE_FLAGS]``.

One run, on a real Ray cluster on this machine (docs/scaling.md, "Cluster"): a head and one node
``far``, each ``ray start --num-cpus 1``, in a network namespace of its own with only ``lo``
(tests/support/remote/ray_cluster.py, the cluster tests' own; needs root), with the router and
every worker inside it. Two measurements (docs/benchmarks.md, "Cluster"):

- **decode across nodes**: the same GGUF under two names, ``near`` on the head (the router's
  own node) and ``far`` on the other node, same flags; streams alternate between them in ABBA
  turns of ``--rounds`` streams each, and the ratio is far's median decode rate over near's;
- **failover**: ``far``'s node dies (every process of its tree SIGKILLed by pid: raylet, node
  agent, the worker), and non-streamed requests for ``far`` are sent until one answers 200;
  the time is from the kill to that answer (the load on the head included).

The head's agent reports at most ``HEAD_MEMORY_MAX`` of room, so ``far``, loaded after the node
joined, goes to the node with more. Every process of the cluster is killed by pid at the end.
This is a measurement, not a test: it exits 0 whether or not the targets are met.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.support.servers import DEFAULT_MODEL, log
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


def _run(model: Path, serve_args: list[str], settings: dict[str, int], tmp: Path) -> Any:
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="the GGUF both serve")
    parser.add_argument("--max-tokens", type=int, help="tokens per stream (128)")
    parser.add_argument("--rounds", type=int, help="streams per model per turn (3)")
    parser.add_argument("--blocks", type=int, help="ABBA blocks of turns (2)")
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    parser.add_argument("serve_args", nargs="*", help="after --: flags for corral serve")
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else FULL
    settings = {key: getattr(args, key, None) or value for key, value in defaults.items()}
    with tempfile.TemporaryDirectory(prefix="corral-bench-") as tmp:
        summary = _run(args.model, args.serve_args, settings, Path(tmp))
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    decode, failover = summary["decode"], summary["failover"]
    print(f"model {summary['model']}; near: on the head (the router's node), far: on node far")
    print(f"{'':30}{'far':>10}{'near':>10}{'ratio':>10}  {'target':<10}met")
    print(
        f"{'decode, median (tok/s)':30}{decode['far_tok_s']:>10.1f}{decode['near_tok_s']:>10.1f}"
        f"{decode['ratio']:>10.3f}  {'>= 0.97':<10}{'yes' if decode['target_met'] else 'NO'}"
    )
    print(
        f"{'node death -> next 200 (s)':30}{failover['seconds']:>10.2f}{'':>20}  "
        f"{'<= 15 s':<10}{'yes' if failover['target_met'] else 'NO'}"
    )
    log(
        f"{decode['streams_each']} streams each; after the death, {len(failover['errors_before'])}"
        f" answer(s) before the 200 {failover['errors_before']}, answered from "
        f"{failover['answered_from']}"
    )


if __name__ == "__main__":
    main()
