"""What the router adds on top of a worker: ``python -m bench.proxy_overhead [--quick] [--json]``.

One router is started on ``--port 0``; the first routed request loads the model, and the worker's
own ``listening`` log line (which the router re-emits, tagged with the model) gives its port, so
the very same worker is measured routed and direct. Direct requests carry the key the router gave
the worker, read from its environment as only the same user can (docs/protocol.md §8); the router
starts no spare, whose workers get their key on stdin instead. Routed and direct runs alternate
(ABBA) so that drift from anything else on the machine falls on both alike. This is a
measurement, not a test: it exits 0 whether or not the targets are met.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from corral.children.worker_key import WORKER_KEY_ENV

REPO = Path(__file__).resolve().parents[1]
TARGET_ADDED_P50_MS = 1.0
TARGET_STREAM_RATIO = 0.98
FULL = {"requests": 500, "max_tokens": 128, "rounds": 3, "streams": 32, "stream_requests": 40}
QUICK = {"requests": 50, "max_tokens": 16, "rounds": 1, "streams": 4, "stream_requests": 5}
IDLE_SECONDS = 5.0  # the router's idle CPU (its timers) is read this long before the streams
# Long enough that tokenize does real work, short enough that HTTP dominates.
TOKENIZE_TEXT = "The quick brown fox jumps over the lazy dog. " * 4
# A small model keeps counting for a long time, so streams reach max_tokens rather than EOS.
PROMPT = "Count from 1 to 1000, separated by commas."
SERIAL_NOTE = (
    "the worker has 1 slot (--parallel 1, its default): it serves one sequence at a time, so "
    "concurrent streams queue inside it and aggregate tok/s is about the 1-stream rate"
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Router:
    """A ``corral serve`` child whose JSON log is read for its URL and its workers' ports."""

    def __init__(self, models_dir: Path, serve_args: list[str], tree: Path = REPO) -> None:
        """``tree``: the source tree to run (another commit's worktree, with this venv); ``-m``
        puts the working directory first on ``sys.path``, and the workers inherit it."""
        command = [sys.executable, "-m", "router", "serve", "--port", "0", "--models-spare", "0"]
        self.process = subprocess.Popen(
            [*command, "--models-dir", str(models_dir), *serve_args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
        self.url = ""
        self.worker_ports: dict[str, int] = {}
        self.tail: deque[str] = deque(maxlen=30)  # for error messages; the log keeps draining
        self.failed_exits: list[dict[str, Any]] = []  # "worker exited" logged as an error
        self._changed = threading.Condition()
        threading.Thread(target=self._read_log, daemon=True).start()
        with self._changed:
            self._changed.wait_for(lambda: self.url or self.process.poll() is not None, 60)
        if not self.url:
            self.stop()
            raise RuntimeError("router did not start:\n" + "\n".join(self.tail))

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            text = raw.decode(errors="replace").rstrip()
            self.tail.append(text)
            try:
                record = json.loads(text)
            except ValueError:
                continue
            with self._changed:
                if record.get("event") == "corral listening":
                    self.url = str(record["url"])
                elif record.get("event") == "listening" and record.get("source") == "worker":
                    self.worker_ports[str(record["model"])] = int(record["port"])
                elif record.get("event") == "worker exited" and record.get("level") == "error":
                    self.failed_exits.append(record)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def worker_port(self, model: str, timeout: float = 30) -> int:
        with self._changed:
            self._changed.wait_for(lambda: model in self.worker_ports, timeout)
        if model not in self.worker_ports:
            raise RuntimeError(f"no 'listening' line from the {model} worker")
        return self.worker_ports[model]

    def cpu_seconds(self) -> float:
        times = psutil.Process(self.process.pid).cpu_times()
        return times.user + times.system

    def loop_cpu_seconds(self) -> float:
        """CPU time of the router's main thread, whose event loop handles every request: to the
        nanosecond (Linux's schedstat), where the process's times count 10 ms ticks."""
        pid = self.process.pid
        try:
            return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):  # not Linux: the whole process, in ticks
            return self.cpu_seconds()

    def worker_pid(self, port: int) -> int:
        """The router child listening on ``port``: proof that "direct" is the routed worker."""
        for child in psutil.Process(self.process.pid).children(recursive=True):
            for conn in child.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port:
                    return child.pid
        raise RuntimeError(f"no child of the router listens on port {port}")

    def stop(self) -> list[int]:
        """SIGTERM the router (it stops its workers); returns the pids of any left running."""
        children: list[psutil.Process] = []
        with contextlib.suppress(psutil.NoSuchProcess):  # already gone: nothing to list
            children = psutil.Process(self.process.pid).children(recursive=True)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        left = []
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):  # gone between the check and status
                if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                    left.append(child.pid)
                    child.kill()  # our own grandchild: never leave it behind
        return left


@dataclass
class Run:
    """What every measurement needs: both ways to the worker, and the router's CPU clock."""

    targets: dict[str, httpx.AsyncClient]
    router_cpu: Callable[[], float]
    loop_cpu: Callable[[], float]  # the router's event loop, exact (Router.loop_cpu_seconds)
    model: str
    settings: dict[str, int]


def chat_body(model: str, max_tokens: int) -> bytes:
    messages = [{"role": "user", "content": PROMPT}]
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "stream": True}
    return json.dumps({**body, "temperature": 0, "seed": 1}).encode()


async def stream_tokens(client: httpx.AsyncClient, body: bytes) -> int:
    """Tokens in one streamed chat completion: the closing chunk's usage, else content chunks.

    Chunks undercount once a worker merges tokens (held-back stop strings, split UTF-8).
    """
    tokens = 0
    async with client.stream("POST", "/v1/chat/completions", content=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if "error" in event:
                raise RuntimeError(f"stream failed: {event['error']}")
            if "usage" in event:
                return int(event["usage"]["completion_tokens"])
            if event["choices"] and event["choices"][0]["delta"].get("content"):
                tokens += 1
    return tokens


async def batch(client: httpx.AsyncClient, body: bytes, streams: int) -> tuple[int, float]:
    started = time.perf_counter()
    counts = await asyncio.gather(*(stream_tokens(client, body) for _ in range(streams)))
    return sum(counts), time.perf_counter() - started


def abba(index: int) -> tuple[str, str]:
    return ("routed", "direct") if index % 2 == 0 else ("direct", "routed")


async def tokenize_latency(run: Run) -> dict[str, Any]:
    requests = run.settings["requests"]
    warm_up = max(10, requests // 10)
    body = json.dumps({"model": run.model, "content": TOKENIZE_TEXT}).encode()
    samples: dict[str, list[float]] = {"routed": [], "direct": []}
    cpu_before = run.router_cpu()  # the router idles during direct requests: all of it is routing
    loop_before = run.loop_cpu()
    for index in range(warm_up + requests):
        for name in abba(index):
            started = time.perf_counter()
            (await run.targets[name].post("/tokenize", content=body)).raise_for_status()
            if index >= warm_up:
                samples[name].append((time.perf_counter() - started) * 1000)
    cpu_ms = (run.router_cpu() - cpu_before) * 1000 / (warm_up + requests)
    loop_ms = (run.loop_cpu() - loop_before) * 1000 / (warm_up + requests)
    result: dict[str, Any] = {
        "requests": requests,
        "router_cpu_ms_per_request": cpu_ms,
        "router_loop_ms_per_request": loop_ms,
    }
    for name, values in samples.items():
        p99 = statistics.quantiles(values, n=100, method="inclusive")[98]
        result[f"{name}_ms"] = {"p50": statistics.median(values), "p99": p99}
    for q in ("p50", "p99"):
        result[f"added_{q}_ms"] = result["routed_ms"][q] - result["direct_ms"][q]
    result["target_met"] = result["added_p50_ms"] <= TARGET_ADDED_P50_MS
    return result


async def streamed_cpu(run: Run) -> dict[str, Any]:
    """The router's event-loop CPU per streamed chat: routed streams one after another (the
    direct ones cost the router nothing). The loop also wakes for its timers while a stream
    runs, so its idle CPU per second, read just before, is taken off for the net figure."""
    requests, body = (
        run.settings["stream_requests"],
        chat_body(run.model, run.settings["max_tokens"]),
    )
    await stream_tokens(run.targets["routed"], body)  # warm-up
    loop_before, started = run.loop_cpu(), time.perf_counter()
    await asyncio.sleep(IDLE_SECONDS)
    idle_per_s = (run.loop_cpu() - loop_before) / (time.perf_counter() - started)
    tokens, loop_before, started = 0, run.loop_cpu(), time.perf_counter()
    for _ in range(requests):
        tokens += await stream_tokens(run.targets["routed"], body)
    cpu, seconds = run.loop_cpu() - loop_before, time.perf_counter() - started
    net = cpu - idle_per_s * seconds
    return {
        "requests": requests,
        "tokens_per_request": tokens / requests,
        "router_loop_ms_per_request": cpu * 1000 / requests,
        "router_loop_us_per_token": cpu * 1e6 / tokens,
        "idle_loop_ms_per_s": idle_per_s * 1000,
        "net_ms_per_request": net * 1000 / requests,
        "net_us_per_token": net * 1e6 / tokens,
    }


async def throughput(run: Run, streams: int) -> dict[str, Any]:
    max_tokens, rounds = run.settings["max_tokens"], run.settings["rounds"]
    for name in ("routed", "direct"):  # warm-up: opens the connections, fills caches
        await batch(run.targets[name], chat_body(run.model, min(8, max_tokens)), streams)
    body = chat_body(run.model, max_tokens)
    tokens, seconds = {"routed": 0, "direct": 0}, {"routed": 0.0, "direct": 0.0}
    per_round: dict[str, list[float]] = {"routed": [], "direct": []}
    cpu_before = run.router_cpu()
    for index in range(rounds):
        for name in abba(index):
            count, elapsed = await batch(run.targets[name], body, streams)
            tokens[name] += count
            seconds[name] += elapsed
            per_round[name].append(count / elapsed)
            log(f"  {streams} stream(s), {name}: {count} tokens, {count / elapsed:.1f} tok/s")
    cpu_seconds = run.router_cpu() - cpu_before
    rates = {name: tokens[name] / seconds[name] for name in tokens}
    ratio = rates["routed"] / rates["direct"]
    return {
        "streams": streams,
        "rounds": rounds,
        "max_tokens": max_tokens,
        "tokens_per_stream": {name: tokens[name] / (rounds * streams) for name in tokens},
        "routed_tps": rates["routed"],
        "direct_tps": rates["direct"],
        "per_round_tps": per_round,
        "router_cpu_ms_per_token": cpu_seconds * 1000 / tokens["routed"],
        "router_cpu_share": cpu_seconds / seconds["routed"],  # of one core, while routing
        "ratio": ratio,
        "target_met": ratio >= TARGET_STREAM_RATIO,
    }


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


async def measure(router: Router, settings: dict[str, int], model: str) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=settings["streams"] + 4)
    timeout = httpx.Timeout(600.0, connect=10.0)
    async with httpx.AsyncClient(base_url=router.url, timeout=timeout, limits=limits) as routed:
        log(f"loading {model} through the router ...")
        (await routed.post("/tokenize", json={"model": model, "content": "x"})).raise_for_status()
        port = router.worker_port(model)
        pid = router.worker_pid(port)
        direct_url = f"http://127.0.0.1:{port}"
        log(f"router {router.url}, worker pid {pid} at {direct_url}")
        keyed = {"X-Corral-Worker-Key": psutil.Process(pid).environ()[WORKER_KEY_ENV]}
        async with httpx.AsyncClient(
            base_url=direct_url, headers=keyed, timeout=timeout, limits=limits
        ) as direct:
            targets = {"routed": routed, "direct": direct}
            run = Run(targets, router.cpu_seconds, router.loop_cpu_seconds, model, settings)
            slots = int((await direct.get("/props")).json().get("total_slots", 1))
            log(f"tokenize latency, {settings['requests']} requests each ...")
            summary: dict[str, Any] = {"tokenize": await tokenize_latency(run)}
            log(f"router CPU per streamed request, {settings['stream_requests']} requests ...")
            summary["streamed"] = await streamed_cpu(run)
            for key, streams in (("single_stream", 1), ("concurrent", settings["streams"])):
                log(f"{streams} stream(s) at once ...")
                summary[key] = await throughput(run, streams)
    note = SERIAL_NOTE if slots == 1 else f"the worker batches up to {slots} sequences"
    machine = {"cpus": os.cpu_count(), "cpu": cpu_name()}
    header = {"model": model, "machine": machine, "worker_pid": pid, "worker_slots": slots}
    return {**header, **summary, "note": note}


def print_table(summary: dict[str, Any]) -> None:
    tok, one, many = summary["tokenize"], summary["single_stream"], summary["concurrent"]
    met = {True: "yes", False: "NO"}
    machine = summary["machine"]
    print(
        f"model {summary['model']}, {summary['worker_slots']} worker slot(s), "
        f"{machine['cpus']} CPUs ({machine['cpu']})"
    )
    print(f"{'':22}{'routed':>10}{'direct':>10}{'added/ratio':>14}  {'target':<10}met")
    for q in ("p50", "p99"):
        target = f"{'<= 1 ms':<10}{met[tok['target_met']]}" if q == "p50" else ""
        print(
            f"{'tokenize ' + q + ' (ms)':22}{tok['routed_ms'][q]:>10.3f}"
            f"{tok['direct_ms'][q]:>10.3f}{tok[f'added_{q}_ms']:>+11.3f} ms  {target}"
        )
    for result in (one, many):
        print(
            f"{str(result['streams']) + ' stream(s) (tok/s)':22}{result['routed_tps']:>10.1f}"
            f"{result['direct_tps']:>10.1f}{result['ratio'] * 100:>12.1f} %  "
            f"{'>= 98 %':<10}{met[result['target_met']]}"
        )
    print(
        f"router CPU: {tok['router_cpu_ms_per_request']:.2f} ms per tokenize request; per token "
        f"{one['router_cpu_ms_per_token']:.2f} ms (1 stream), "
        f"{many['router_cpu_ms_per_token']:.2f} ms ({many['streams']} streams)"
    )
    streamed = summary["streamed"]
    print(
        f"router event loop CPU (exact): {tok['router_loop_ms_per_request']:.3f} ms per tokenize "
        f"request; {streamed['router_loop_ms_per_request']:.3f} ms per streamed request of "
        f"{streamed['tokens_per_request']:.0f} tokens ({streamed['router_loop_us_per_token']:.1f} "
        f"us per token), {streamed['net_ms_per_request']:.3f} ms net of its idle "
        f"{streamed['idle_loop_ms_per_s']:.2f} ms/s ({streamed['requests']} requests)"
    )
    print(
        f"tokenize: {tok['requests']} requests each; streams: {one['rounds']} round(s) each, "
        f"{one['tokens_per_stream']['routed']:.0f} of {one['max_tokens']} max tokens per stream"
    )
    print(f"note: {summary['note']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--models-dir", type=Path, default=REPO / "models", help="(models/)")
    parser.add_argument("--model-file", type=Path, help="benchmark this GGUF instead")
    parser.add_argument("--requests", type=int, help="tokenize requests per target (500)")
    parser.add_argument("--max-tokens", type=int, help="tokens per stream (128)")
    parser.add_argument("--rounds", type=int, help="streaming rounds per target (3)")
    parser.add_argument("--streams", type=int, help="concurrent streams (32)")
    parser.add_argument(
        "--stream-requests", type=int, help="routed streams for the CPU per streamed request (40)"
    )
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    parser.add_argument(
        "serve_args", nargs="*", help="after --: flags for corral serve (-- --parallel 32 -c 8192)"
    )
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else FULL
    settings = {key: getattr(args, key) or value for key, value in defaults.items()}

    with tempfile.TemporaryDirectory(prefix="corral-bench-") as tmp:
        models_dir = args.models_dir
        if args.model_file is not None:
            models_dir = Path(tmp)
            (models_dir / args.model_file.name).symlink_to(args.model_file.resolve())
        router = Router(models_dir, args.serve_args)
        try:
            if args.model_file is not None:
                model = args.model_file.stem
            else:  # the first model of the directory, not one found in a hub cache
                entries = httpx.get(f"{router.url}/models", timeout=30).json()["data"]
                model = next(e["id"] for e in entries if e["source"] == "models_dir")
            summary = asyncio.run(measure(router, settings, model))
        finally:
            left = router.stop()
            log(f"router stopped; workers left running: {left or 'none'}")
    summary["workers_left"] = left
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_table(summary)


if __name__ == "__main__":
    main()
