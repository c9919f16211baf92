"""Two routers side by side: ``python -m bench.proxy_overhead_ab --base TREE [--json]``.

``bench.proxy_overhead`` measures one tree; two of its runs, one after the other, differ by 3
to 10 % in tokens/s on a 2-core machine, and by a few per cent even in CPU time, so they cannot
show a change of 1 %. Here the tree this file is in (``new``) and another commit's source tree
(``base``: a ``git worktree``, run with this venv) each start a router with its own worker of the
same model, and the requests go to one, then the other, one at a time (ABBA): both routers run
through the same moments, so what drifts on the machine falls on both alike (blocks of a few
hundred requests a side still differed by 8 % from one block to the next). Each router's CPU is
read around chunks of such requests. The router started first costs 1.5 to 3 % more (A/A runs,
the same tree both sides), so a run is several sessions, each starting both routers afresh,
taking turns at which starts first; each figure is new over base with that order's effect taken
out (:func:`balanced`), with a 95 % interval, and each session's own ratio.

Figures, routed only (the direct way is ``bench.proxy_overhead``'s):

- the router's event-loop CPU per ``/tokenize`` (its main thread's schedstat, in ns);
- its event-loop CPU per streamed chat, and per token; net of the loop's timers, whose rate is
  read with both routers idle first;
- at S concurrent streams: the whole router's CPU per token (all its threads, psutil).

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
    IDLE_SECONDS,
    REPO,
    TOKENIZE_TEXT,
    Router,
    batch,
    chat_body,
    cpu_name,
    log,
    stream_tokens,
)
from bench.support.servers import DEFAULT_MODEL

SIDES = ("new", "base")
PHASES = ("tokenize", "streamed", "concurrent")
# The two-sided 97.5 % point of Student's t, by degrees of freedom.
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


def order(unit: int) -> tuple[str, str]:
    """ABBA, unit by unit: new, base, then base, new."""
    return SIDES if unit % 2 == 0 else (SIDES[1], SIDES[0])


class Side:
    """One router and a client to it."""

    def __init__(self, router: Router, client: httpx.AsyncClient) -> None:
        self.router, self.client = router, client
        self.idle_rate = 0.0  # its loop's CPU per second with nothing to do: its timers

    def loop(self) -> float:
        return self.router.loop_cpu_seconds()

    def clocks(self) -> tuple[float, float]:
        return self.loop(), self.router.cpu_seconds()


async def idle_rates(sides: dict[str, Side]) -> None:
    """Each router's loop CPU per second while neither has a request: what its timers cost."""
    before, started = {name: side.loop() for name, side in sides.items()}, time.perf_counter()
    await asyncio.sleep(IDLE_SECONDS)
    for name, side in sides.items():
        side.idle_rate = (side.loop() - before[name]) / (time.perf_counter() - started)


async def chunks(
    sides: dict[str, Side], count: int, units: int, one: Callable[[Side], Awaitable[int]]
) -> dict[str, list[dict[str, float]]]:
    """``count`` chunks of ``units`` units per side, the sides taking turns unit by unit (ABBA):
    both routers run through the same moments, so what drifts on the machine (clock speed,
    caches, other work) falls on both alike. Each router's CPU is read around the chunk; while
    the other side's unit runs it idles, and its timers' CPU (its idle rate) is taken off for
    the ``net_loop_s`` figure. ``one`` returns the unit's tokens (1 for a request without)."""
    results: dict[str, list[dict[str, float]]] = {name: [] for name in SIDES}
    for _ in range(count):
        before = {name: side.clocks() for name, side in sides.items()}
        work, started = dict.fromkeys(SIDES, 0), time.perf_counter()
        for unit in range(units):
            for name in order(unit):
                work[name] += await one(sides[name])
        wall = time.perf_counter() - started
        for name, side in sides.items():
            loop, cpu = (
                after - first for after, first in zip(side.clocks(), before[name], strict=True)
            )
            net = loop - side.idle_rate * wall
            chunk = {"loop_s": loop, "net_loop_s": net, "cpu_s": cpu, "wall_s": wall}
            results[name].append({**chunk, "units": units, "tokens": work[name]})
    return results


def compare(results: dict[str, list[dict[str, float]]], figure: str, per: str) -> dict[str, Any]:
    """Each side's ``figure`` per ``per`` over the chunks given, and new / base."""
    totals = {
        name: sum(b[figure] for b in results[name]) / sum(b[per] for b in results[name])
        for name in SIDES
    }
    return {**totals, "ratio": totals["new"] / totals["base"]}


def tokenize_one(model: str) -> Callable[[Side], Awaitable[int]]:
    body = json.dumps({"model": model, "content": TOKENIZE_TEXT}).encode()

    async def one(side: Side) -> int:
        (await side.client.post("/tokenize", content=body)).raise_for_status()
        return 1

    return one


def streamed_one(body: bytes) -> Callable[[Side], Awaitable[int]]:
    async def one(side: Side) -> int:
        return await stream_tokens(side.client, body)

    return one


def concurrent_one(body: bytes, streams: int) -> Callable[[Side], Awaitable[int]]:
    async def one(side: Side) -> int:
        tokens, _ = await batch(side.client, body, streams)
        return tokens

    return one


Raw = dict[str, dict[str, list[dict[str, float]]]]  # phase → side → chunks


async def measure(sides: dict[str, Side], model: str, args: argparse.Namespace) -> Raw:
    """One session's chunks, phase by phase."""
    await idle_rates(sides)
    raw: Raw = {}
    if "tokenize" in args.only:
        log(f"tokenize: {args.chunks} chunks of {args.requests} requests a side ...")
        raw["tokenize"] = await chunks(sides, args.chunks, args.requests, tokenize_one(model))
    body = chat_body(model, args.max_tokens)
    if "streamed" in args.only:
        log(f"streamed chats: {args.chunks} chunks of {args.stream_requests} a side ...")
        one = streamed_one(body)
        raw["streamed"] = await chunks(sides, args.chunks, args.stream_requests, one)
    if "concurrent" in args.only:
        log(f"{args.streams} streams at once: {args.chunks} chunks of 2 batches a side ...")
        warm = chat_body(model, 8)
        for side in sides.values():  # opens the connections the streams will use
            await batch(side.client, warm, args.streams)
        one = concurrent_one(body, args.streams)
        raw["concurrent"] = await chunks(sides, args.chunks, 2, one)
    return raw


# Figure → (phase, what, per what, scale to print).
FIGURES = {
    "tokenize_loop_ms": ("tokenize", "net_loop_s", "units", 1000.0),
    "streamed_loop_ms": ("streamed", "loop_s", "units", 1000.0),
    "streamed_net_loop_ms": ("streamed", "net_loop_s", "units", 1000.0),
    "streamed_net_loop_us_per_token": ("streamed", "net_loop_s", "tokens", 1e6),
    "concurrent_cpu_us_per_token": ("concurrent", "cpu_s", "tokens", 1e6),
}


def balanced(ratios: list[float]) -> tuple[float, float, float]:
    """new / base with the start order's effect taken out, and a 95 % interval: the geometric
    mean of the sessions' ratios (as many started each way), and Student's t on what is left of
    their spread once each start order's own mean is taken off (sessions - 2 degrees of
    freedom)."""
    logs = [math.log(ratio) for ratio in ratios]
    groups = (
        [logs[i] for i in range(len(logs)) if _new_first(i)],
        [logs[i] for i in range(len(logs)) if not _new_first(i)],
    )
    mean = statistics.fmean(statistics.fmean(group) for group in groups if group)
    residuals = [x - statistics.fmean(group) for group in groups for x in group]
    freedom = len(logs) - 2
    if freedom < 1 or not all(groups):
        return math.exp(mean), math.nan, math.nan
    spread = math.sqrt(sum(r * r for r in residuals) / freedom) / math.sqrt(len(logs))
    half = T975.get(freedom, 2.0) * spread
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def _new_first(session: int) -> bool:
    """Sessions take turns at which router starts first: new, base, base, new, …"""
    return session % 4 in (0, 3)


def summarize(sessions: list[Raw]) -> dict[str, Any]:
    """Each figure over all sessions' chunks, and its ratio in each session: a router started
    first costs a little more than one started second, so sessions take turns at starting first
    and their ratios are shown."""
    summary: dict[str, Any] = {}
    for figure, (phase, what, per, scale) in FIGURES.items():
        if phase not in sessions[0]:
            continue
        pooled = {name: [c for raw in sessions for c in raw[phase][name]] for name in SIDES}
        result = compare(pooled, what, per)
        result["new"] *= scale
        result["base"] *= scale
        ratios = [compare(raw[phase], what, per)["ratio"] for raw in sessions]
        result["sessions"] = ratios
        result["estimate"], result["low"], result["high"] = balanced(ratios)
        summary[figure] = result
    return summary


def print_table(summary: dict[str, Any]) -> None:
    labels = {
        "tokenize_loop_ms": "event-loop CPU per /tokenize (ms)",
        "streamed_loop_ms": "event-loop CPU per streamed chat (ms)",
        "streamed_net_loop_ms": "  net of timers (ms)",
        "streamed_net_loop_us_per_token": "  net, per token (us)",
        "concurrent_cpu_us_per_token": "router CPU per token, S streams (us)",
    }
    print(f"{'':40}{'new':>10}{'base':>10}{'new/base':>10}  95 % interval; per session")
    for key, label in labels.items():
        if (figure := summary.get(key)) is None:
            continue
        sessions = " ".join(f"{ratio:.4f}" for ratio in figure["sessions"])
        print(
            f"{label:40}{figure['new']:>10.4f}{figure['base']:>10.4f}{figure['estimate']:>10.4f}"
            f"  {figure['low']:.4f} to {figure['high']:.4f}; {sessions}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=Path, required=True, help="the other commit's source tree")
    parser.add_argument(
        "--new", type=Path, default=REPO, help="the tree to compare with it (this one)"
    )
    parser.add_argument("--model-file", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--sessions", type=int, default=8, help="router starts per side (8)")
    parser.add_argument("--chunks", type=int, default=2, help="chunks per figure a session (2)")
    parser.add_argument("--requests", type=int, default=400, help="tokenize requests a chunk")
    parser.add_argument("--stream-requests", type=int, default=6, help="streamed chats a chunk")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per stream (64)")
    parser.add_argument("--streams", type=int, default=32, help="concurrent streams (32)")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=PHASES,
        default=PHASES[:2],
        help="these figures only (default tokenize streamed; concurrent is slow)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    parser.add_argument("serve_args", nargs="*", help="after --: flags for both routers")
    args = parser.parse_args(argv)
    model = args.model_file.stem

    async def run(routers: dict[str, Router]) -> Raw:
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
        trees, sessions, left = {"new": args.new.resolve(), "base": args.base.resolve()}, [], []
        for session in range(args.sessions):
            first = SIDES if _new_first(session) else (SIDES[1], SIDES[0])
            log(f"session {session + 1}: the {first[0]} router starts first")
            routers: dict[str, Router] = {}
            try:
                for name in first:
                    routers[name] = Router(Path(tmp), args.serve_args, trees[name])
                sessions.append(asyncio.run(run(routers)))
            finally:
                left += [pid for router in routers.values() for pid in router.stop()]
        log(f"routers stopped; workers left running: {left or 'none'}")
    summary = summarize(sessions)
    summary["settings"] = {
        key: getattr(args, key)
        for key in ("sessions", "chunks", "requests", "stream_requests", "max_tokens")
    } | {
        "streams": args.streams,
        "serve_args": args.serve_args,
        "base": str(args.base),
        "new": str(args.new),
    }
    summary["machine"] = {"cpu": cpu_name(), "workers_left": left}
    if not args.json:
        print_table(summary)
        return
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
