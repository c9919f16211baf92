"""Two routers side by side: ``python -m bench.proxy_overhead_ab --base TREE [--json]``.

``bench.proxy_overhead`` measures one tree; two of its runs, one after the other, differ by 3
to 10 % in tokens/s on a 2-core machine, and by a few per cent even in CPU time, so they cannot
show a change of 1 %. Here the tree this file is in (``new``) and another commit's source tree
(``base``: a ``git worktree``, run with this venv) each start a router with its own worker of the
same model, and the requests go to one, then the other, in short blocks (ABBA), many times: what
drifts on the machine falls on both alike, and the blocks give each figure's spread. For each
figure it reports new over base, over all blocks, and a 95 % interval of that ratio from the
blocks (a paired t interval on the per-pair ratios).

Figures, routed only (the direct way is ``bench.proxy_overhead``'s):

- the router's event-loop CPU per ``/tokenize`` (its main thread's schedstat, in ns);
- its event-loop CPU per streamed chat, and per token, net of the loop's timers (their rate read
  while that router idles during the other's blocks);
- at S concurrent streams: aggregate tokens/s, and the whole router's CPU per token (all its
  threads, psutil).

A measurement, not a test: it exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from bench.proxy_overhead import (
    REPO,
    TOKENIZE_TEXT,
    Router,
    batch,
    chat_body,
    cpu_name,
    log,
    stream_tokens,
)
from bench.servers import DEFAULT_MODEL

SIDES = ("new", "base")
# The two-sided 97.5 % point of Student's t, by degrees of freedom (pairs - 1).
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


def order(pair: int) -> tuple[str, str]:
    """ABBA over pairs of blocks: new, base, then base, new."""
    return SIDES if pair % 2 == 0 else (SIDES[1], SIDES[0])


def interval(ratios: list[float]) -> tuple[float, float]:
    """A 95 % interval of the mean of per-pair ratios (paired t)."""
    if len(ratios) < 2:
        return math.nan, math.nan
    mean, half = statistics.fmean(ratios), statistics.stdev(ratios) / math.sqrt(len(ratios))
    half *= T975.get(len(ratios) - 1, 2.0)
    return mean - half, mean + half


class Side:
    """One router, a client to it, and what its blocks measured."""

    def __init__(self, router: Router, client: httpx.AsyncClient) -> None:
        self.router, self.client = router, client
        self.idle: list[tuple[float, float]] = []  # (loop CPU s, wall s) while the other ran

    def loop(self) -> float:
        return self.router.loop_cpu_seconds()

    def idle_rate(self) -> float:
        cpu, wall = (sum(column) for column in zip(*self.idle, strict=True))
        return cpu / wall if wall else 0.0


async def blocks(
    sides: dict[str, Side], pairs: int, block: Callable[[Side], Awaitable[dict[str, float]]]
) -> dict[str, list[dict[str, float]]]:
    """``pairs`` ABBA pairs of one block per side; the side not measured idles meanwhile, and its
    loop's CPU then is its timers' (``Side.idle``)."""
    results: dict[str, list[dict[str, float]]] = {name: [] for name in SIDES}
    for pair in range(pairs):
        for name in order(pair):
            other = sides[SIDES[1] if name == SIDES[0] else SIDES[0]]
            other_cpu, started = other.loop(), time.perf_counter()
            results[name].append(await block(sides[name]))
            other.idle.append((other.loop() - other_cpu, time.perf_counter() - started))
    return results


def compare(results: dict[str, list[dict[str, float]]], figure: str, per: str) -> dict[str, Any]:
    """new / base of ``figure`` per ``per`` over all blocks, and the per-pair ratios' interval."""
    totals = {
        name: sum(b[figure] for b in results[name]) / sum(b[per] for b in results[name])
        for name in SIDES
    }
    pairs = [
        (new[figure] / new[per]) / (base[figure] / base[per])
        for new, base in zip(results["new"], results["base"], strict=True)
    ]
    low, high = interval(pairs)
    return {**totals, "ratio": totals["new"] / totals["base"], "low": low, "high": high}


def tokenize_block(model: str, requests: int) -> Callable[[Side], Awaitable[dict[str, float]]]:
    body = json.dumps({"model": model, "content": TOKENIZE_TEXT}).encode()

    async def block(side: Side) -> dict[str, float]:
        before = side.loop()
        for _ in range(requests):
            (await side.client.post("/tokenize", content=body)).raise_for_status()
        return {"loop_s": side.loop() - before, "requests": requests}

    return block


def streamed_block(body: bytes, requests: int) -> Callable[[Side], Awaitable[dict[str, float]]]:
    async def block(side: Side) -> dict[str, float]:
        before, started, tokens = side.loop(), time.perf_counter(), 0
        for _ in range(requests):
            tokens += await stream_tokens(side.client, body)
        cpu, wall = side.loop() - before, time.perf_counter() - started
        return {"loop_s": cpu, "wall_s": wall, "requests": requests, "tokens": tokens}

    return block


def concurrent_block(body: bytes, streams: int) -> Callable[[Side], Awaitable[dict[str, float]]]:
    async def block(side: Side) -> dict[str, float]:
        before = side.router.cpu_seconds()
        tokens, wall = await batch(side.client, body, streams)
        return {"cpu_s": side.router.cpu_seconds() - before, "tokens": tokens, "wall_s": wall}

    return block


def net_of_timers(side: Side, results: list[dict[str, float]]) -> None:
    """Takes the loop's timer CPU (its rate while idle) off each streamed block."""
    rate = side.idle_rate()
    for result in results:
        result["net_loop_s"] = result["loop_s"] - rate * result["wall_s"]


async def measure(sides: dict[str, Side], model: str, args: argparse.Namespace) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    log(f"tokenize: {args.pairs} pairs of {args.requests} requests ...")
    tokenized = await blocks(sides, args.pairs, tokenize_block(model, args.requests))
    summary["tokenize_loop_ms"] = compare(tokenized, "loop_s", "requests")

    body = chat_body(model, args.max_tokens)
    for side in sides.values():  # the idle rates below are the streamed phase's alone
        side.idle.clear()
    log(f"streamed chats: {args.pairs} pairs of {args.stream_requests} ...")
    streamed = await blocks(sides, args.pairs, streamed_block(body, args.stream_requests))
    for name, side in sides.items():
        net_of_timers(side, streamed[name])
    summary["streamed_loop_ms"] = compare(streamed, "loop_s", "requests")
    summary["streamed_net_loop_ms"] = compare(streamed, "net_loop_s", "requests")
    summary["streamed_net_loop_per_token"] = compare(streamed, "net_loop_s", "tokens")
    summary["idle_loop_ms_per_s"] = {name: side.idle_rate() * 1000 for name, side in sides.items()}

    log(f"{args.streams} streams at once: {args.pairs} pairs ...")
    warm = chat_body(model, 8)
    for side in sides.values():  # opens the connections the streams will use
        await batch(side.client, warm, args.streams)
    concurrent = await blocks(sides, args.pairs, concurrent_block(body, args.streams))
    summary["concurrent_cpu_per_token"] = compare(concurrent, "cpu_s", "tokens")
    summary["concurrent_seconds_per_token"] = compare(concurrent, "wall_s", "tokens")
    for name in ("tokenize_loop_ms", "streamed_loop_ms", "streamed_net_loop_ms"):
        for key in (*SIDES, "low", "high"):  # per request, in ms
            summary[name][key] *= 1000 if key in SIDES else 1
    return summary


def print_table(summary: dict[str, Any]) -> None:
    rows = (
        ("tokenize_loop_ms", "event-loop CPU per /tokenize (ms)"),
        ("streamed_loop_ms", "event-loop CPU per streamed chat (ms)"),
        ("streamed_net_loop_ms", "  net of timers (ms)"),
        ("concurrent_cpu_per_token", "router CPU per token, S streams (ms)"),
        ("concurrent_seconds_per_token", "wall per token, S streams (ms)"),
    )
    print(f"{'':40}{'new':>10}{'base':>10}{'new/base':>10}  95 % interval")
    for key, label in rows:
        figure = summary[key]
        scale = 1000 if key.startswith("concurrent") else 1
        print(
            f"{label:40}{figure['new'] * scale:>10.4f}{figure['base'] * scale:>10.4f}"
            f"{figure['ratio']:>10.4f}  {figure['low']:.4f} to {figure['high']:.4f}"
        )
    idle = summary["idle_loop_ms_per_s"]
    print(f"loop timers while idle (ms/s): new {idle['new']:.3f}, base {idle['base']:.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=Path, required=True, help="the other commit's source tree")
    parser.add_argument("--model-file", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--pairs", type=int, default=8, help="ABBA pairs of blocks per figure (8)")
    parser.add_argument("--requests", type=int, default=200, help="tokenize requests a block")
    parser.add_argument("--stream-requests", type=int, default=5, help="streamed chats a block")
    parser.add_argument("--max-tokens", type=int, default=128, help="tokens per stream (128)")
    parser.add_argument("--streams", type=int, default=32, help="concurrent streams (32)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    parser.add_argument("serve_args", nargs="*", help="after --: flags for both routers")
    args = parser.parse_args(argv)
    model = args.model_file.stem

    async def run(routers: dict[str, Router]) -> dict[str, Any]:
        limits = httpx.Limits(max_connections=args.streams + 4)
        timeout = httpx.Timeout(600.0, connect=10.0)
        clients = {
            name: httpx.AsyncClient(base_url=router.url, timeout=timeout, limits=limits)
            for name, router in routers.items()
        }
        try:
            sides = {name: Side(routers[name], clients[name]) for name in SIDES}
            for name, side in sides.items():
                log(f"loading {model} through the {name} router ({side.router.url}) ...")
                await stream_tokens(side.client, chat_body(model, 8))
            return await measure(sides, model, args)
        finally:
            for client in clients.values():
                await client.aclose()

    with tempfile.TemporaryDirectory(prefix="corral-bench-") as tmp:
        (Path(tmp) / args.model_file.name).symlink_to(args.model_file.resolve())
        routers: dict[str, Router] = {}
        try:
            for name, tree in (("new", REPO), ("base", args.base.resolve())):
                routers[name] = Router(Path(tmp), args.serve_args, tree)
            summary = asyncio.run(run(routers))
        finally:
            left = [pid for router in routers.values() for pid in router.stop()]
            log(f"routers stopped; workers left running: {left or 'none'}")
    summary["settings"] = {
        key: getattr(args, key) for key in ("pairs", "requests", "stream_requests", "max_tokens")
    } | {"streams": args.streams, "serve_args": args.serve_args, "base": str(args.base)}
    summary["machine"] = {"cpu": cpu_name(), "workers_left": left}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_table(summary)


if __name__ == "__main__":
    main()
