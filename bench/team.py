"""A team's afternoon, replayed against Corral's router and llama.cpp's: ``python -m bench.team``.

``python -m bench.team --llama-server PATH [--quick] [--json PATH]``

Three chat models with room for two (``--models-max 2`` on both sides, the same ``--threads``,
``--ctx-size`` and ``--parallel``): the bundled SmolLM2 and two stand-ins of other shapes
(bench/support/standin.py, written once into models/team-bench/). Several users chat, an agent
works, a batch key runs a job: the trace of bench/team_trace.py, seeded, the same on both sides.
Each side runs it for the same window with a fresh router, in turns (ABBA by default: Corral,
llama.cpp, llama.cpp, Corral), and what is not done when a window closes is not delivered.
The report (bench/team_report.py) gives per class the time to first token, requests and tokens
delivered, errors; per side the model loads, counted by each server itself, and the swaps
among them (loads of a model already loaded once in that window); and the ratios against the
issue's targets. docs/benchmarks.md (Team) has how to read it.

Keys: every actor has its own API key on both sides (Corral: ``--api-key-file``, with a class
per key when the tree knows ``class=``; llama.cpp: the same secrets in ``--api-key``, where a
key has no class). A measurement, not a test: it exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx
import msgspec

from bench.support.servers import DEFAULT_MODEL, REPO, Server, corral_router, llama_server, log
from bench.support.standin import write_standin
from bench.team_report import Outcome, SideFigures, render, side_figures
from bench.team_trace import BATCH_PER_SECOND, MODELS, Actor, Request, Trace, make_trace

CORRAL, LLAMA = "corral", "llama.cpp"
STANDINS = {"standin-360m": "smollm2-360m", "standin-135m": "smollm2-135m"}
OBSERVER = "observer"  # the bench's own key, to read /metrics and /models
# The key class each actor's key carries on Corral (the agent is a program someone waits on).
KEY_CLASSES = {"interactive": "interactive", "agent": "interactive", "batch": "batch"}
# llama.cpp's router logs this line each time it starts a model's process (server-models.cpp).
_SPAWN = re.compile(r"spawning server instance with name=(\S+) on port")
_CORRAL_LOADS = re.compile(r'^corral_model_loads_total\{model="([^"]+)"\} (\S+)$', re.M)


def secret(key: str) -> str:
    return f"team-{key}"


def _models_dir(directory: Path) -> Path:
    """The three models under the names the trace asks for, stand-ins written once."""
    cache = REPO / "models" / "team-bench"
    cache.mkdir(parents=True, exist_ok=True)
    files = {MODELS[0]: DEFAULT_MODEL}
    for name, shape in STANDINS.items():
        files[name] = cache / f"{shape}-f16.gguf"
        if not files[name].is_file():
            log(f"writing the stand-in {files[name].name} (once)")
            partial = files[name].with_suffix(".partial")
            write_standin(DEFAULT_MODEL, shape, partial)
            partial.rename(files[name])
    models = directory / "models"
    models.mkdir()
    for name, path in files.items():
        (models / f"{name}.gguf").symlink_to(path.resolve())
        with path.open("rb") as weights:  # the page cache holds them for both sides alike
            while weights.read(1 << 24):
                pass
    return models


def _key_file(directory: Path, trace: Trace, classes: bool) -> Path:
    lines = [f"{secret(OBSERVER)} admin"]
    for key, cls in sorted({(actor.key, actor.cls) for actor in trace.actors}):
        lines.append(f"{secret(key)} inference" + (f" class={KEY_CLASSES[cls]}" if classes else ""))
    path = directory / "keys.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def classes_known() -> bool:
    """Whether this tree's key file takes ``class=`` (before the scheduler change it refuses
    any word it does not know, and the router would not start)."""
    from router.security.api_keys import ApiKeyFileError, load_api_keys

    with tempfile.TemporaryDirectory() as directory:
        probe = Path(directory) / "keys.txt"
        probe.write_text("probe inference class=interactive\n", encoding="utf-8")
        try:
            load_api_keys([], [probe])
        except ApiKeyFileError:
            return False
    return True


async def _send(
    client: httpx.AsyncClient, request: Request, key: str, out: Outcome, t0: float
) -> None:
    body = {
        **request.body,
        "model": request.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
        "temperature": 0,
    }
    headers = {"Authorization": f"Bearer {secret(key)}"}
    if request.conversation:
        headers["X-Conversation-Id"] = request.conversation
    async with client.stream("POST", request.route, json=body, headers=headers) as response:
        if response.status_code != 200:
            text = (await response.aread())[:200].decode(errors="replace")
            out.error = f"HTTP {response.status_code}: {text}"
            return
        counted, usage = 0, None
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if "error" in event:
                out.error = f"error event: {json.dumps(event['error'])[:200]}"
                return
            usage = (event.get("usage") or {}).get("completion_tokens", usage)
            for choice in event.get("choices") or []:
                if choice.get("text") or (choice.get("delta") or {}).get("content"):
                    if out.ttft_s is None:
                        out.ttft_s = time.monotonic() - t0 - out.sent_s
                    counted += 1
    if out.ttft_s is None:
        out.error = "a stream with no token"
        return
    out.tokens, out.done = usage or counted, True


async def _actor(url: str, actor: Actor, outcomes: list[Outcome], t0: float, window: float) -> None:
    # A connection per request: llama-server drops idle keep-alive connections
    # (bench/support/streams.py).
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=None, limits=limits) as client:
        for request in actor.requests:
            await asyncio.sleep(request.wait_s)
            if time.monotonic() - t0 >= window:
                return
            out = Outcome(actor.name, actor.cls, request.model, time.monotonic() - t0)
            outcomes.append(out)
            try:
                await _send(client, request, actor.key, out, t0)
            except httpx.HTTPError as exc:
                out.error = f"{type(exc).__name__}: {exc}"[:200]


async def replay(url: str, trace: Trace) -> list[Outcome]:
    """Every actor of the trace against ``url`` for the trace's window; then whatever is still
    running is cancelled (its connection closed) and marked cut."""
    outcomes: list[Outcome] = []
    t0 = time.monotonic()
    tasks = [
        asyncio.create_task(_actor(url, actor, outcomes, t0, trace.window_s))
        for actor in trace.actors
    ]
    _, pending = await asyncio.wait(tasks, timeout=trace.window_s)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for out in outcomes:
        out.cut = not out.done and out.error is None
    return outcomes


def _observer() -> dict[str, str]:
    return {"Authorization": f"Bearer {secret(OBSERVER)}"}


def corral_loads(url: str) -> dict[str, int]:
    """Loads started: completed ones from ``/metrics`` (``corral_model_loads_total``) plus any
    still loading in ``/models``, so that a load under way counts as llama.cpp's spawn does."""
    text = httpx.get(f"{url}/metrics", headers=_observer(), timeout=30).text
    loads = {model: int(float(value)) for model, value in _CORRAL_LOADS.findall(text)}
    for model in httpx.get(f"{url}/models", headers=_observer(), timeout=30).json()["data"]:
        if model["status"]["value"] == "loading":
            loads[model["id"]] = loads.get(model["id"], 0) + 1
    return {model: n for model, n in loads.items() if n}


def llama_loads(log_text: str) -> dict[str, int]:
    """Model processes llama.cpp's router started, from its log."""
    loads: dict[str, int] = {}
    for model in _SPAWN.findall(log_text):
        loads[model] = loads.get(model, 0) + 1
    return loads


def _server(
    side: str, binary: Path | None, flags: list[str], keys: Path, log_path: Path
) -> AbstractContextManager[Server]:
    if side == CORRAL:
        # Its saved KV caches in a folder of this turn's own: a later turn must not find them.
        kv = log_path.with_suffix(".kv")
        return corral_router(
            [*flags, "--api-key-file", str(keys), "--kv-cache-dir", str(kv)], log_path
        )
    assert binary is not None
    secrets = ",".join(
        line.split()[0] for line in keys.read_text(encoding="utf-8").splitlines() if line
    )
    return llama_server(binary, [*flags, "--api-key", secrets], log_path)


def _turn(
    side: str,
    binary: Path | None,
    flags: list[str],
    keys: Path,
    trace: Trace,
    log_path: Path,
    settle_s: float,
) -> tuple[list[Outcome], dict[str, int]]:
    with _server(side, binary, flags, keys, log_path) as server:
        time.sleep(settle_s)  # Corral's spare worker warm, the machine quiet again
        log(f"{side}: replaying {trace.window_s:.0f} s (load average {os.getloadavg()[0]:.2f})")
        outcomes = asyncio.run(replay(server.url, trace))
        if side == CORRAL:
            loads = corral_loads(server.url)
        else:
            loads = llama_loads(log_path.read_text(encoding="utf-8", errors="replace"))
    done = sum(o.done for o in outcomes)
    log(f"{side}: {len(outcomes)} sent, {done} completed, loads {loads}")
    return outcomes, loads


@contextmanager
def _logs(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
    else:
        with tempfile.TemporaryDirectory(prefix="corral-team-") as directory:
            yield Path(directory)


def _order(order: str, binary: Path | None) -> list[str]:
    sides = {"A": CORRAL, "B": LLAMA}
    return [sides[letter] for letter in order if binary is not None or letter == "A"]


class Turn(msgspec.Struct):
    side: str
    sent: int
    completed: int
    loads: dict[str, int]
    load_average: float  # the machine's, 1 minute, as the window opened


class Results(msgspec.Struct):
    classes: bool  # whether Corral's keys carried class=
    turns: list[Turn]
    sides: dict[str, SideFigures]


def run(args: argparse.Namespace) -> Results:
    trace = make_trace(args.seed, args.window, args.batch_per_second)
    classes = {"on": True, "off": False, "auto": None}[args.classes]
    if classes is None:
        classes = classes_known()
        log(f"key classes: {'on' if classes else 'off (this tree refuses class=)'}")
    flags = [
        "--models-max",
        "2",
        "--ctx-size",
        str(args.ctx_size),
        "--parallel",
        str(args.parallel),
    ]
    threads = {
        CORRAL: args.corral_threads or args.threads,
        LLAMA: args.llama_threads or args.threads,
    }
    outcomes: dict[str, list[Outcome]] = {}
    loads: dict[str, list[dict[str, int]]] = {}  # per side, per window
    turns: list[Turn] = []
    order = _order(args.order, args.llama_server)
    with tempfile.TemporaryDirectory(prefix="corral-team-") as work, _logs(args.logs) as logs:
        directory = Path(work)
        flags += ["--models-dir", str(_models_dir(directory))]
        keys = _key_file(directory, trace, classes)
        for n, side in enumerate(order):
            log_path = logs / f"{n + 1}-{side}.log"
            load_average = os.getloadavg()[0]
            side_flags = flags if threads[side] == "default" else [*flags, "-t", threads[side]]
            got, counted = _turn(
                side, args.llama_server, side_flags, keys, trace, log_path, args.settle
            )
            done = sum(o.done for o in got)
            turns.append(Turn(side, len(got), done, counted, load_average))
            outcomes.setdefault(side, []).extend(got)
            loads.setdefault(side, []).append(counted)
    batch = sum(len(a.requests) for a in trace.actors if a.cls == "batch")
    sides = {
        side: side_figures(
            outcomes[side], trace.window_s, loads.get(side, []), batch * order.count(side)
        )
        for side in outcomes
    }
    return Results(classes, turns, sides)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llama-server", type=Path, help="llama-server binary (the anchor)")
    parser.add_argument("--window", type=float, default=60.0, help="seconds of trace per turn")
    parser.add_argument("--order", default="ABBA", help="turns: A Corral, B llama.cpp")
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument(
        "--batch-per-second",
        type=float,
        default=BATCH_PER_SECOND,
        help="the batch job's size per second of window (default: a backlog; 0.5: a job to finish)",
    )
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds between a router's start and its window"
    )
    parser.add_argument(
        "--threads", default="1", help="-t for every model, both sides; `default`: none given"
    )
    parser.add_argument("--corral-threads", help="-t for Corral's models (default: --threads)")
    parser.add_argument("--llama-threads", help="-t for llama.cpp's models (default: --threads)")
    parser.add_argument("--ctx-size", type=int, default=4096)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument(
        "--classes",
        choices=("auto", "on", "off"),
        default="auto",
        help="class= on Corral's keys; auto: if this tree's key file takes it",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: --window 12 --order AB --settle 1"
    )
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--trace-out", type=Path, help="write the trace here (JSON) and exit")
    parser.add_argument("--logs", type=Path, help="keep each turn's server log in this folder")
    args = parser.parse_args()
    if not DEFAULT_MODEL.is_file():
        parser.error(
            f"{DEFAULT_MODEL} not found: run `python3 scripts/bootstrap.py --default-model`"
        )
    if args.quick:
        args.window, args.order, args.settle = 12.0, "AB", 1.0
    if args.trace_out:
        trace = msgspec.json.encode(make_trace(args.seed, args.window, args.batch_per_second))
        args.trace_out.write_bytes(msgspec.json.format(trace))
        return
    if not args.order or set(args.order) - {"A", "B"}:
        parser.error("--order is a string of A (Corral) and B (llama.cpp), e.g. ABBA")
    log(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; turns {args.order}")
    results = run(args)
    print(
        f"turns: {' '.join(turn.side for turn in results.turns)}; Corral's keys with class=: "
        f"{'yes' if results.classes else 'no'}; window {args.window:.0f} s per turn; batch "
        f"{args.batch_per_second:g} requests per second of window\n"
    )
    print(render(results.sides))
    log(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        figures = {"settings": {k: str(v) for k, v in vars(args).items()}, "results": results}
        args.json.write_bytes(msgspec.json.format(msgspec.json.encode(figures)))


if __name__ == "__main__":
    os.chdir(REPO)
    main()
