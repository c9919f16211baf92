"""Swaps, memory and defaults against llama-server: ``python -m bench.swap [--quick]``.

Four measurements, each side by side with llama-server when ``--llama-server PATH`` is given
(docs/benchmarks.md, Swaps):

- **cold start** through the router: a model not loaded (page cache warm), request → first
  token; Corral with its spare worker, Corral without (``--models-spare 0``), and llama.cpp's
  router (``llama-server --models-dir``);
- **swap ping-pong**: two models, ``--models-max 1``, requests alternating between them; the
  time to the first token of each, which includes the eviction and the load;
- **memory**: one model, ``-c 4096 -np 4`` and then the defaults, after one answered request:
  the worker's RSS, PSS and USS against llama-server's (and a spare worker's);
- **defaults**: no tuning flags on either side, single stream and 4 concurrent streams; both
  servers up at once and measured in turn (``--blocks`` ABBA blocks, each figure a median).

A measurement, not a test: it exits 0 whatever the figures. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from bench.support.comparison import Target, print_comparison
from bench.support.servers import (
    DEFAULT_MODEL,
    REPO,
    Server,
    corral_router,
    corral_worker,
    llama_server,
    log,
)
from bench.support.streams import measure_in_turn, one_stream
from corral.children.environment import ROUTER_PID_ENV
from corral.children.protocol import SPARE_STATE, LineSplitter, StateMessage, parse_line

Figures = dict[str, float]
MEMORY_FLAGS = ["--ctx-size", "4096", "--parallel", "4"]
TARGETS = {
    "cold_start_s": Target(0.8, at_most=True),
    "swap_s": Target(0.9, at_most=True),
    "rss_mib": Target(1.15, at_most=True),
    "single_tok_s": Target(0.95),
    "aggregate_4_tok_s": Target(0.90),
}


def _first_token(url: str, model: str) -> float:
    """Seconds from sending a request for ``model`` to its first streamed token."""

    async def run() -> float:
        async with httpx.AsyncClient(base_url=url, timeout=600) as client:
            return (await one_stream(client, 2, model)).ttft_s

    return asyncio.run(run())


def _status(url: str, model: str) -> str:
    data = httpx.get(f"{url}/models", timeout=30).json()["data"]
    status: str = next(m for m in data if m["id"] == model)["status"]["value"]
    return status


def _unload(url: str, model: str) -> None:
    httpx.post(f"{url}/models/unload", json={"model": model}, timeout=60)
    deadline = time.monotonic() + 60
    while _status(url, model) != "unloaded":
        if time.monotonic() > deadline:
            raise RuntimeError(f"{model} did not unload")
        time.sleep(0.05)


def _cold_starts(server: Server, rounds: int, settle: float) -> Figures:
    _first_token(server.url, "A")  # the page cache holds the weights from now on
    _unload(server.url, "A")
    times = []
    for _ in range(rounds):
        time.sleep(settle)  # a spare replaced, the machine quiet again
        times.append(_first_token(server.url, "A"))
        _unload(server.url, "A")
    return {"cold_start_s": statistics.median(times), "cold_start_min_s": min(times)}


def _ping_pong(server: Server, swaps: int) -> Figures:
    _first_token(server.url, "A")
    times = [_first_token(server.url, "B" if turn % 2 == 0 else "A") for turn in range(swaps)]
    return {"swap_s": statistics.median(times), "swap_total_s": sum(times)}


def _memory(process: subprocess.Popen[bytes]) -> Figures:
    info = psutil.Process(process.pid).memory_full_info()
    mib = 1 << 20
    return {"rss_mib": info.rss / mib, "pss_mib": info.pss / mib, "uss_mib": info.uss / mib}


def _answered_once(server: Server) -> Figures:
    _first_token(server.url, "")
    return _memory(server.process)


def _spare_memory() -> Figures:
    """A spare worker alone (everything imported, no model), as the router keeps one."""
    env = {**os.environ, ROUTER_PID_ENV: str(os.getpid())}
    command = [sys.executable, "-m", "worker", "--spare"]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert process.stdout is not None
        splitter = LineSplitter()
        while chunk := os.read(process.stdout.fileno(), 65536):
            lines = [parse_line(line) for line in splitter.feed(chunk)]
            if StateMessage(SPARE_STATE) in lines:
                return _memory(process)
        raise RuntimeError("the spare worker exited before it was warm")
    finally:
        process.kill()
        process.wait()


def _defaults(model: Path, binary: Path | None, max_tokens: int, blocks: int) -> dict[str, Figures]:
    """Both servers up at once, measured in turn (ABBA blocks): one after the other, the load's
    drift decided the single-stream ratio (docs/benchmarks.md)."""
    with contextlib.ExitStack() as stack:
        urls = {"corral": stack.enter_context(corral_worker(model)).url}
        if binary is not None:
            server = stack.enter_context(llama_server(binary, ["--model", str(model)]))
            urls["llama-server"] = server.url
        return measure_in_turn(urls, max_tokens, 2, blocks)


class _Report:
    """Each table printed as soon as it is measured (a long run may be cut short), or JSON."""

    def __init__(self, as_json: bool) -> None:
        self._json = as_json
        self._sections: dict[str, dict[str, Figures]] = {}

    def add(self, title: str, results: dict[str, Figures]) -> None:
        self._sections[title] = results
        if not self._json:
            print(f"\n## {title} (load average {os.getloadavg()[0]:.2f})", flush=True)
            print_comparison(results, TARGETS, digits=2)
            sys.stdout.flush()

    def close(self) -> None:
        if self._json:
            print(json.dumps(self._sections, indent=2))


def _routers(
    binary: Path | None,
    models_dir: Path,
    measure: Callable[[Server], Figures],
    extra: list[str],
) -> dict[str, Figures]:
    flags = ["--models-dir", str(models_dir), "--models-max", "1", *extra]
    results: dict[str, Figures] = {}
    log("corral serve (spare worker)")
    with corral_router([*flags, "--models-spare", "1"]) as server:
        results["corral"] = measure(server)
    if binary is not None:
        log("llama-server --models-dir")
        with llama_server(binary, flags) as server:
            results["llama-server"] = measure(server)
    log("corral serve --models-spare 0")
    with corral_router([*flags, "--models-spare", "0"]) as server:
        results["corral, no spare"] = measure(server)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--llama-server", type=Path, help="llama-server binary to compare with")
    parser.add_argument("--rounds", type=int, default=5, help="cold starts per server")
    parser.add_argument("--swaps", type=int, default=8, help="ping-pong swaps per server")
    parser.add_argument("--settle", type=float, default=3.0, help="idle seconds between loads")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument(
        "--threads",
        type=int,
        help="-t for both routers' models (default: each side's own); 1 keeps llama-server's "
        "spinning threads out of the comparison on a machine loaded by other jobs",
    )
    parser.add_argument(
        "--blocks",
        type=int,
        default=4,
        help="ABBA blocks of the defaults part (each turn: two single streams and four at once)",
    )
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--only", choices=("cold", "swap", "memory", "defaults"), action="append", default=[]
    )
    args = parser.parse_args()
    if not args.model.is_file():  # else every model would be missing from the routers' lists
        parser.error(f"{args.model} not found: run `python3 scripts/bootstrap.py --default-model`")
    if args.quick:
        args.rounds, args.swaps, args.settle, args.max_tokens, args.blocks = 1, 2, 2.0, 16, 1
    parts = set(args.only) or {"cold", "swap", "memory", "defaults"}
    binary: Path | None = args.llama_server
    extra = [] if args.threads is None else ["--threads", str(args.threads)]
    model: Path = args.model.resolve()
    log(f"model {model.name}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    report = _Report(args.json)
    with tempfile.TemporaryDirectory(prefix="corral-swap-") as directory:
        models_dir = Path(directory)
        for name in ("A", "B"):  # two models, one file: the page cache holds it once
            (models_dir / f"{name}.gguf").symlink_to(model)
        if "cold" in parts:
            report.add(
                "cold start",
                _routers(
                    binary,
                    models_dir,
                    lambda server: _cold_starts(server, args.rounds, args.settle),
                    extra,
                ),
            )
        if "swap" in parts:
            report.add(
                "swap ping-pong",
                _routers(binary, models_dir, lambda server: _ping_pong(server, args.swaps), extra),
            )
    if "memory" in parts:
        for label, flags in (("-c 4096 -np 4", MEMORY_FLAGS), ("defaults", [])):
            results: dict[str, Figures] = {}
            with corral_worker(model, flags) as server:
                results["corral"] = _answered_once(server)
            if binary is not None:
                with llama_server(binary, ["--model", str(model), *flags]) as server:
                    results["llama-server"] = _answered_once(server)
            report.add(f"memory, {label}", results)
        report.add("memory, a spare worker", {"corral": _spare_memory()})
    if "defaults" in parts:
        defaults = _defaults(model, binary, args.max_tokens, args.blocks)
        report.add("defaults, no tuning flags", defaults)
    log(f"load average after: {os.getloadavg()[0]:.2f}")
    report.close()


if __name__ == "__main__":
    os.chdir(REPO)
    main()
