"""Corral's worker against llama-server: ``python -m bench.engine_vs_llama_server [--quick]``.

Same GGUF, same threads, same slot count, in one run: single-stream decode tokens/s and time to
first token, then aggregate tokens/s with 4 and 8 concurrent streams. With ``--llama-server
PATH`` both servers are measured and the ratios printed (docs/benchmarks.md explains how to
build the binary from the llama.cpp tree in the llama-cpp-python sdist); without it, Corral's
own figures. A measurement, not a test: it exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from corral.children.protocol import LineSplitter, StateMessage, parse_line

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
TARGET_SINGLE, TARGET_AGGREGATE = 0.95, 0.90


@dataclass
class StreamResult:
    ttft_s: float  # request sent -> first content chunk
    tokens: int
    decode_s: float  # first content chunk -> last one


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def corral_worker(model: Path, threads: int, slots: int, ctx: int, *extra: str) -> Iterator[str]:
    """A worker on a port it chose itself, read from its ``ready`` state line."""
    command = [
        sys.executable,
        "-m",
        "worker",
        "--model",
        str(model),
        "--port",
        "0",
        "--threads",
        str(threads),
        "--parallel",
        str(slots),
        "--ctx-size",
        str(ctx),
        *extra,
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        assert process.stdout is not None
        splitter = LineSplitter()
        while chunk := os.read(process.stdout.fileno(), 65536):
            for line in splitter.feed(chunk):
                message = parse_line(line)
                if isinstance(message, StateMessage) and message.state == "ready":
                    yield f"http://127.0.0.1:{message.payload['port']}"
                    return
        raise RuntimeError("the Corral worker exited before it was ready")
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def llama_server(binary: Path, model: Path, threads: int, slots: int, ctx: int) -> Iterator[str]:
    # llama-server cannot report a port it picked, so this benchmark picks one for it.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        str(binary),
        "--model",
        str(model),
        "--port",
        str(port),
        "--threads",
        str(threads),
        "--parallel",
        str(slots),
        "--ctx-size",
        str(ctx),
        "--no-webui",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        else:
            raise RuntimeError("llama-server did not become healthy")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


async def one_stream(client: httpx.AsyncClient, max_tokens: int) -> StreamResult:
    body = {
        "messages": PROMPT,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "ignore_eos": True,
        "cache_prompt": False,
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
    return StreamResult(first - sent, tokens, last - first)


async def measure(url: str, max_tokens: int, rounds: int) -> dict[str, float]:
    limits = httpx.Limits(max_connections=None)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        await one_stream(client, 8)  # warm-up
        singles = [await one_stream(client, max_tokens) for _ in range(rounds)]
        figures = {
            "single_tok_s": statistics.median((r.tokens - 1) / r.decode_s for r in singles),
            "ttft_ms": statistics.median(r.ttft_s * 1000 for r in singles),
        }
        for streams in (4, 8):
            started = time.perf_counter()
            results = await asyncio.gather(
                *(one_stream(client, max_tokens) for _ in range(streams))
            )
            elapsed = time.perf_counter() - started
            figures[f"aggregate_{streams}_tok_s"] = sum(r.tokens for r in results) / elapsed
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--llama-server", type=Path, help="llama-server binary to compare with")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--ctx-size", type=int, default=8192)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.quick:
        args.max_tokens, args.rounds = 16, 1
    setup = (args.model, args.threads, args.slots, args.ctx_size)
    log(
        f"model {args.model.name}, {args.threads} threads, {args.slots} slots, "
        f"ctx {args.ctx_size}, {args.max_tokens} tokens per stream"
    )
    results: dict[str, dict[str, float]] = {}
    with corral_worker(*setup) as url:
        results["corral"] = asyncio.run(measure(url, args.max_tokens, args.rounds))
    if args.llama_server is not None:
        with llama_server(args.llama_server, *setup) as url:
            results["llama-server"] = asyncio.run(measure(url, args.max_tokens, args.rounds))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    names = list(results)
    print(
        f"{'metric':<22}"
        + "".join(f"{name:>14}" for name in names)
        + ("   ratio  target" if len(names) == 2 else "")
    )
    targets = {
        "single_tok_s": TARGET_SINGLE,
        "aggregate_4_tok_s": TARGET_AGGREGATE,
        "aggregate_8_tok_s": TARGET_AGGREGATE,
    }
    for metric in results["corral"]:
        row = f"{metric:<22}" + "".join(f"{results[n][metric]:>14.1f}" for n in names)
        if len(names) == 2:
            ratio = results["corral"][metric] / results["llama-server"][metric]
            target = targets.get(metric)
            verdict = (
                ""
                if target is None
                else f"  >= {target:.2f} {'met' if ratio >= target else 'MISSED'}"
            )
            row += f"   {ratio:5.2f}{verdict}"
        print(row)


if __name__ == "__main__":
    main()
