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

``--trace thrash`` and ``--trace fair`` replay bench/team_trace.py's other two traces (two
users alternating between two models with room for one; one model, a heavy key and a light key
of one class), with the ``--models-max`` and ``--parallel`` each trace names; the fair trace
runs each side once more with the light key alone, and Corral once more under ``--schedule
fifo``. ``--batch-bursts 10`` sends the team trace's batch job in bursts; ``--defaults`` gives
no ``-t`` on either side.

Keys: every actor has its own API key on both sides (Corral: ``--api-key-file``, with a class
per key when the tree knows ``class=``; llama.cpp: the same secrets in ``--api-key``, where a
key has no class). A measurement, not a test: it exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx
import msgspec

from bench.support.servers import DEFAULT_MODEL, REPO, Server, corral_router, llama_server, log
from bench.support.team_setup import (
    classes_known,
    corral_loads,
    key_file,
    llama_loads,
    models_dir,
    secret,
)
from bench.team_report import (
    FairFigures,
    Outcome,
    SideFigures,
    fair_figures,
    render,
    render_fair,
    side_figures,
)
from bench.team_trace import (
    BATCH_PER_SECOND,
    BURST_EVERY_S,
    TRACES,
    Actor,
    Request,
    Trace,
    make_fair_trace,
    make_thrash_trace,
    make_trace,
)

CORRAL, LLAMA = "corral", "llama.cpp"
ALONE, FIFO = " alone", " fifo"  # the fair trace's other runs, after the side's name


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
            if request.at_s is not None:  # on a clock: not before its time, late if it must
                await asyncio.sleep(max(0.0, t0 + request.at_s - time.monotonic()))
            if time.monotonic() - t0 >= window:
                return
            sent = time.monotonic() - t0
            out = Outcome(actor.name, actor.cls, request.model, sent, key=actor.key)
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
    side: str  # the run's label: a side, or for the fair trace a side and what ran
    sent: int
    completed: int
    loads: dict[str, int]
    load_average: float  # the machine's, 1 minute, as the window opened


class Results(msgspec.Struct):
    classes: bool  # whether Corral's keys carried class=
    turns: list[Turn]
    sides: dict[str, SideFigures]
    fair: dict[str, FairFigures] | None = None  # the fair trace's, per router run


def traces(args: argparse.Namespace) -> list[tuple[str, Trace, list[str]]]:
    """Per side letter's turn, what it runs: (label suffix, trace, extra Corral flags). The
    fair trace runs the light key alone too, and on Corral once more under --schedule fifo."""
    if args.trace == "thrash":
        return [("", make_thrash_trace(args.seed, args.window), [])]
    if args.trace == "fair":
        heavy, alone = (make_fair_trace(args.seed, args.window, h) for h in (True, False))
        return [("", heavy, []), (ALONE, alone, []), (FIFO, heavy, ["--schedule", "fifo"])]
    trace = make_trace(args.seed, args.window, args.batch_per_second, args.batch_bursts)
    return [("", trace, [])]


def run(args: argparse.Namespace) -> Results:
    runs = traces(args)
    trace = runs[0][1]
    classes = {"on": True, "off": False, "auto": None}[args.classes]
    if classes is None:
        classes = classes_known()
        log(f"key classes: {'on' if classes else 'off (this tree refuses class=)'}")
    flags = [
        "--models-max",
        str(trace.models_max),
        "--ctx-size",
        str(args.ctx_size),
        "--parallel",
        str(trace.parallel or args.parallel),
    ]
    threads = {
        CORRAL: args.corral_threads or args.threads,
        LLAMA: args.llama_threads or args.threads,
    }
    outcomes: dict[str, list[Outcome]] = {}
    loads: dict[str, list[dict[str, int]]] = {}  # per run's label, per window
    turns: list[Turn] = []
    with tempfile.TemporaryDirectory(prefix="corral-team-") as work, _logs(args.logs) as logs:
        directory = Path(work)
        flags += ["--models-dir", str(models_dir(directory))]
        keys = key_file(directory, trace, classes)
        for side in _order(args.order, args.llama_server):
            for suffix, replayed, corral_flags in runs:
                if corral_flags and side != CORRAL:
                    continue  # Corral's own setting: llama.cpp's router has no other order
                label = side + suffix
                log_path = logs / f"{len(turns) + 1}-{label.replace(' ', '-')}.log"
                load_average = os.getloadavg()[0]
                side_flags = [*flags, *corral_flags]
                if threads[side] != "default":
                    side_flags += ["-t", threads[side]]
                got, counted = _turn(
                    side, args.llama_server, side_flags, keys, replayed, log_path, args.settle
                )
                turns.append(Turn(label, len(got), sum(o.done for o in got), counted, load_average))
                outcomes.setdefault(label, []).extend(got)
                loads.setdefault(label, []).append(counted)
    if args.trace == "fair":
        fair = {
            label: fair_figures(got, outcomes.get(label + ALONE, []), trace.window_s)
            for label, got in outcomes.items()
            if not label.endswith(ALONE)
        }
        return Results(classes, turns, {}, fair)
    batch = sum(len(a.requests) for a in trace.actors if a.cls == "batch")
    sides = {
        label: side_figures(got, trace.window_s, loads[label], batch * len(loads[label]))
        for label, got in outcomes.items()
    }
    return Results(classes, turns, sides)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llama-server", type=Path, help="llama-server binary (the anchor)")
    parser.add_argument("--trace", choices=TRACES, default="team", help="which trace to replay")
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
        "--batch-bursts",
        type=int,
        default=0,
        metavar="N",
        help=f"team trace: the batch job as N requests at once every {BURST_EVERY_S:g} s",
    )
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds between a router's start and its window"
    )
    parser.add_argument(
        "--threads", default="1", help="-t for every model, both sides; `default`: none given"
    )
    parser.add_argument(
        "--defaults", action="store_true", help="no -t on either side (--threads default)"
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
    if args.defaults:  # what a user who sets nothing gets, on both sides
        args.threads, args.corral_threads, args.llama_threads = "default", None, None
    if args.trace_out:
        trace = msgspec.json.encode(traces(args)[0][1])
        args.trace_out.write_bytes(msgspec.json.format(trace))
        return
    if not args.order or set(args.order) - {"A", "B"}:
        parser.error("--order is a string of A (Corral) and B (llama.cpp), e.g. ABBA")
    log(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; turns {args.order}")
    results = run(args)
    print(
        f"trace {args.trace}; turns: {', '.join(turn.side for turn in results.turns)}; Corral's "
        f"keys with class=: {'yes' if results.classes else 'no'}; window {args.window:.0f} s "
        f"per turn; -t {args.corral_threads or args.threads} (Corral), "
        f"{args.llama_threads or args.threads} (llama.cpp); batch "
        + (
            f"in bursts of {args.batch_bursts}"
            if args.batch_bursts
            else f"{args.batch_per_second:g} requests per second of window"
        )
        + "\n"
    )
    if results.fair is not None:
        print(render_fair(results.fair, CORRAL, CORRAL + FIFO))
    else:
        print(render(results.sides, args.trace))
    log(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        figures = {"settings": {k: str(v) for k, v in vars(args).items()}, "results": results}
        args.json.write_bytes(msgspec.json.format(msgspec.json.encode(figures)))


if __name__ == "__main__":
    os.chdir(REPO)
    main()
