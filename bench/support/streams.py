"""Streamed chat completions, timed: what the engine benchmarks measure on any server."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.support.servers import DEFAULT_MODEL, log

__all__ = [
    "PROMPT",
    "StreamResult",
    "add_stream_flags",
    "measure_in_turn",
    "measure_streams",
    "one_stream",
    "worker_flags",
]

PROMPT = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]


@dataclass
class StreamResult:
    ttft_s: float  # request sent -> first content chunk
    tokens: int
    decode_s: float  # first content chunk -> last one


async def one_stream(
    client: httpx.AsyncClient, max_tokens: int, model: str | None = None
) -> StreamResult:
    body = {
        "messages": PROMPT,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "ignore_eos": True,
        "cache_prompt": False,
        **({"model": model} if model else {}),
    }
    sent = time.perf_counter()
    first = last = 0.0
    tokens = 0
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                last = time.perf_counter()
                first = first or last
                tokens += 1
    if not tokens:
        raise RuntimeError(f"no tokens from {client.base_url} (status {response.status_code})")
    return StreamResult(first - sent, tokens, last - first)


async def measure_streams(
    url: str, max_tokens: int, rounds: int, concurrent: Sequence[int] = (4, 8)
) -> dict[str, float]:
    """Single-stream decode tokens/s and time to first token, then aggregate tokens/s."""
    # A connection per request: llama-server drops idle keep-alive connections, which under load
    # made a reused one fail ("disconnected without sending a response").
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        await one_stream(client, 8)  # warm-up
        singles = [await one_stream(client, max_tokens) for _ in range(rounds)]
        figures = {
            "single_tok_s": statistics.median((r.tokens - 1) / r.decode_s for r in singles),
            "ttft_ms": statistics.median(r.ttft_s * 1000 for r in singles),
        }
        for streams in concurrent:
            started = time.perf_counter()
            results = await asyncio.gather(
                *(one_stream(client, max_tokens) for _ in range(streams))
            )
            elapsed = time.perf_counter() - started
            figures[f"aggregate_{streams}_tok_s"] = sum(r.tokens for r in results) / elapsed
        return figures


def measure_in_turn(
    urls: dict[str, str], max_tokens: int, rounds: int, blocks: int = 1
) -> dict[str, dict[str, float]]:
    """:func:`measure_streams` (and 4 concurrent) for servers that run all along, each at its
    turns of ``blocks`` ABBA blocks (A, B: ``urls``' order), so that a drift in the machine's
    speed falls on both alike; each figure is the median of its server's turns.

    One block is not enough to tell a few per cent: on 2 cores one stream's rate moved by 15 %
    within minutes, and single streams by ±5 % from one to the next (docs/benchmarks.md).
    """
    turns: dict[str, list[dict[str, float]]] = {name: [] for name in urls}
    for name in [*urls, *reversed(urls)] * blocks:
        log(f"{name} ...")
        turns[name].append(asyncio.run(measure_streams(urls[name], max_tokens, rounds, (4,))))
    return {
        name: {metric: statistics.median(turn[metric] for turn in done) for metric in done[0]}
        for name, done in turns.items()
    }


def add_stream_flags(parser: argparse.ArgumentParser, *, slots: int, ctx_size: int) -> None:
    """The flags every engine benchmark takes: the model, how it runs and how it is measured."""
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--slots", type=int, default=slots)
    parser.add_argument("--ctx-size", type=int, default=ctx_size)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def worker_flags(args: argparse.Namespace) -> list[str]:
    """The server flags those settings mean; ``--quick`` shortens the measurement."""
    if args.quick:
        args.max_tokens, args.rounds = 16, 1
    log(
        f"model {args.model.name}, {args.threads} threads, {args.slots} slots, "
        f"ctx {args.ctx_size}, {args.max_tokens} tokens per stream"
    )
    flags = ["--threads", str(args.threads), "--parallel", str(args.slots)]
    return [*flags, "--ctx-size", str(args.ctx_size)]
