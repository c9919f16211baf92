"""Prompt caches after a kill, a crash or a restart: ``python -m bench.kv_disk``.

The disk tier (docs/serving.md, "KV cache across restarts") against re-prefilling, through the
router, on the bundled model:

- ``worker``: a ~1,500-token conversation, then its worker is SIGKILLed (a crash, the
  watchdog's kill), the model is loaded again (excluded) and the next turn is timed to its
  first streamed token, with ``--kv-cache-dir`` (restored) and with ``--no-kv-persist``
  (prefilled). The tokens of the restored turn are compared with the same turn sent without
  any kill (the uninterrupted run).
- ``router``: the same, but the router and its workers are SIGKILLed together (a power cut)
  and a fresh router is started on the same folder.
- ``interleaved``: four conversations on a one-slot worker (an agent's pattern), one SIGKILL,
  then each one's next turn: the share of its prompt that came back from the cache.
- ``decode``: two routers running side by side, the tier on and off, streams of generated
  tokens in ABBA turns at 1 and 4 streams; with how many of the tier's state reads fell at
  an idle moment and how many between two decode steps.

The break-even of :data:`worker.cache.kv_store.BREAK_EVEN` comes from the kill scenarios: the
time the restored turn took to load its file (its prompt time less the uninterrupted turn's,
which computed the same new tokens) per token, over the re-prefilled turn's time per token.
This is a measurement, not a test: it exits 0 either way.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.kv_restore import DEFAULT_MODEL, ask, conversation, log, wait_loaded
from bench.proxy_overhead import Router
from bench.support.streams import one_stream

Messages = list[dict[str, str]]
TARGETS = {"cache_share": 0.95, "speedup": 10.0, "decode_ratio": 0.97}


def _saved(folder: Path) -> int:
    return len(list(folder.glob("*/*.kv")))


def _until(condition: Callable[[], bool], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # the writer works in the background: its files are what we see
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting")
        time.sleep(0.05)


def _kv_metrics(client: httpx.Client) -> dict[str, float]:
    """The worker's ``corral_kv_cache_*`` counters (through the router's ``?model=``)."""
    text = client.get("/metrics", params={"model": "A"}).text
    figures: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("corral_kv_cache_"):
            name, value = line.rsplit(" ", 1)
            figures[name.removeprefix("corral_kv_cache_")] = float(value)
    return figures


def _both_moments(kv: dict[str, float], name: str) -> float:
    """A state-read counter summed over its moments (idle, and busy: between decode steps)."""
    return sum(kv.get(f'{name}{{moment="{moment}"}}', 0.0) for moment in ("idle", "busy"))


def _kill_worker(router: Router, client: httpx.Client) -> None:
    pid = router.worker_pid(router.worker_port("A"))
    os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(30)
    del router.worker_ports["A"]  # the next load's worker announces its own port

    def gone() -> bool:
        models = client.get("/models").json()["data"]
        return bool(next(m for m in models if m["id"] == "A")["status"]["value"] != "loaded")

    _until(gone, 30)


def _load_again(client: httpx.Client) -> None:
    """Load A after a crash: the router refuses a load for a moment after one (its backoff)."""

    def loaded() -> bool:
        client.post("/models/load", json={"model": "A"})
        models = client.get("/models").json()["data"]
        return bool(next(m for m in models if m["id"] == "A")["status"]["value"] == "loaded")

    _until(loaded, 300)


def _kill_router(router: Router) -> None:
    """SIGKILL the router and its workers at once, as a power cut would."""
    processes = [psutil.Process(router.process.pid)]
    with contextlib.suppress(psutil.NoSuchProcess):
        processes += processes[0].children(recursive=True)
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    router.process.wait()


def _follow_up(messages: Messages, answer: str) -> Messages:
    return [
        *messages,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "Why?"},
    ]


def _turn(ttft: float, text: str, timings: dict[str, Any]) -> dict[str, Any]:
    if not text:
        raise RuntimeError("the turn got no answer")
    cached, read = int(timings.get("cache_n", 0)), int(timings.get("prompt_n", 0))
    return {
        "ttft_ms": round(ttft * 1000, 1),
        "prompt_ms": round(float(timings.get("prompt_ms", 0.0)), 1),
        "cache_n": cached,
        "prompt_tokens": cached + read,
        "cache_share": round(cached / max(cached + read, 1), 3),
        "text": text,
    }


def scenario_kill(
    models: Path, common: list[str], scratch: Path, what: str, turns: int
) -> dict[str, Any]:
    """``what``: "worker" or "router". The prefill side also gives the uninterrupted turn."""
    messages = conversation(turns)
    folder = scratch / f"kv-{what}"
    result: dict[str, Any] = {}
    for side, flags in (
        ("prefill", ["--no-kv-persist"]),
        ("restore", ["--kv-cache-dir", str(folder)]),
    ):
        router = Router(models, [*common, *flags])
        try:
            with contextlib.ExitStack() as clients:
                client = clients.enter_context(httpx.Client(base_url=router.url, timeout=900))
                wait_loaded(client, "A")
                answer = _turn(*ask(client, "A", messages))["text"]
                follow_up = _follow_up(messages, answer)
                if side == "prefill":  # the uninterrupted run: the slot still holds the turn
                    result["uninterrupted"] = _turn(*ask(client, "A", follow_up))
                else:
                    _until(lambda: _saved(folder) >= 1)
                    kv = _kv_metrics(client)
                    reads = max(_both_moments(kv, "state_reads_total"), 1.0)
                    result["state_read_ms"] = round(
                        _both_moments(kv, "state_read_seconds_total") * 1000 / reads, 2
                    )
                    result["bytes_per_file"] = kv.get("bytes_written_total", 0.0)
                if what == "worker":
                    _kill_worker(router, client)
                else:
                    _kill_router(router)
                    router = Router(models, [*common, *flags])
                    client = clients.enter_context(httpx.Client(base_url=router.url, timeout=900))
                _load_again(client)  # the load is not part of the figure
                result[side] = _turn(*ask(client, "A", follow_up))
        finally:
            router.stop()
        log(f"{what} kill, {side}: {result[side]}")
    restore, prefill = result["restore"], result["prefill"]
    result["speedup"] = round(prefill["ttft_ms"] / max(restore["ttft_ms"], 1e-3), 1)
    result["same_tokens"] = restore["text"] == result["uninterrupted"]["text"]
    # Loading a file against prefilling as many tokens (the BREAK_EVEN share): the restored
    # turn's prompt time less the uninterrupted turn's (the same new tokens, nothing loaded),
    # per token loaded, over the re-prefilled turn's prompt time per token.
    load_ms = max(restore["prompt_ms"] - result["uninterrupted"]["prompt_ms"], 0.0)
    per_token = prefill["prompt_ms"] / max(prefill["prompt_tokens"], 1)
    result["load_ms"] = round(load_ms, 1)
    result["break_even"] = round(load_ms / max(restore["cache_n"], 1) / per_token, 4)
    return result


def scenario_interleaved(models: Path, common: list[str], scratch: Path) -> dict[str, Any]:
    folder = scratch / "kv-interleaved"
    flags = [*common, "--parallel", "1", "--kv-cache-dir", str(folder)]
    roles = ("the main agent", "the summariser", "a planning sub-agent", "a testing sub-agent")
    talks = [
        [{"role": "system", "content": f"You are {role}."}, *conversation(4)[1:]] for role in roles
    ]
    router = Router(models, flags)
    try:
        with httpx.Client(base_url=router.url, timeout=900) as client:
            wait_loaded(client, "A")
            answers = [_turn(*ask(client, "A", talk))["text"] for talk in talks]
            _until(lambda: _saved(folder) >= len(talks))
            _kill_worker(router, client)
            _load_again(client)
            turns = [
                _turn(*ask(client, "A", _follow_up(talk, answer)))
                for talk, answer in zip(talks, answers, strict=True)
            ]
    finally:
        router.stop()
    for turn in turns:
        turn.pop("text")
    log(f"interleaved: {turns}")
    return {
        "turns": turns,
        "all_cached": all(t["cache_share"] >= TARGETS["cache_share"] for t in turns),
    }


async def _decode_turn(url: str, streams: int, max_tokens: int) -> tuple[float, float]:
    """Tokens a second while decoding (each stream's own rate from its first token to its
    last, summed over the streams), and over the whole turn (every token over the wall time
    from the requests sent, their prompts and first tokens included)."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=900, limits=limits) as client:
        started = time.perf_counter()
        results = await asyncio.gather(
            *(one_stream(client, max_tokens, "A") for _ in range(streams))
        )
        whole = sum(r.tokens for r in results) / (time.perf_counter() - started)
        return sum((r.tokens - 1) / r.decode_s for r in results), whole


def scenario_decode(
    models: Path, common: list[str], scratch: Path, blocks: int, max_tokens: int
) -> dict[str, Any]:
    sides = {"on": ["--kv-cache-dir", str(scratch / "kv-decode")], "off": ["--no-kv-persist"]}
    routers = {
        side: Router(models, [*common, "--parallel", "4", *flags]) for side, flags in sides.items()
    }
    try:
        for router in routers.values():
            with httpx.Client(base_url=router.url, timeout=900) as client:
                wait_loaded(client, "A")
            asyncio.run(_decode_turn(router.url, 1, 8))  # warm-up
        rates: dict[str, dict[int, list[tuple[float, float]]]] = {
            side: {1: [], 4: []} for side in sides
        }
        for side in [*sides, *reversed(sides)] * blocks:  # ABBA: a drift falls on both alike
            for streams in (1, 4):
                rates[side][streams].append(
                    asyncio.run(_decode_turn(routers[side].url, streams, max_tokens))
                )
            last = [tuple(round(x, 1) for x in r[-1]) for r in rates[side].values()]
            log(f"decode {side} (decode, whole turn) at 1 and 4 streams: {last}")
        with httpx.Client(base_url=routers["on"].url, timeout=900) as client:
            kv = _kv_metrics(client)
        # Where the tier's reads fell: busy ones paused the other streams' decoding.
        reads = {m: kv.get(f'state_reads_total{{moment="{m}"}}', 0.0) for m in ("idle", "busy")}
    finally:
        for router in routers.values():
            router.stop()
    result: dict[str, Any] = {"state_reads": reads}
    for streams in (1, 4):
        # The target is on decoding; the whole turn's figure shows what the tier costs a
        # request's start and end (a restore's lookup, a copy set aside) besides.
        for figure, at in (("decode", 0), ("whole_turn", 1)):
            on, off = (
                statistics.median(r[at] for r in rates[side][streams]) for side in ("on", "off")
            )
            result[f"{streams}_streams_{figure}"] = {
                "on_tok_s": round(on, 1),
                "off_tok_s": round(off, 1),
                "ratio": round(on / off, 3),
            }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument(
        "--only", choices=("worker", "router", "interleaved", "decode"), action="append"
    )
    parser.add_argument("--turns", type=int, default=11, help="conversation turns (~1,500 tokens)")
    parser.add_argument("--blocks", type=int, default=2, help="ABBA blocks of the decode scenario")
    parser.add_argument("--max-tokens", type=int, default=128, help="tokens per decode stream")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if not args.model.is_file():
        sys.exit(f"{args.model} not found: run `python3 scripts/bootstrap.py --default-model`")
    chosen = args.only or ["worker", "router", "interleaved", "decode"]
    summary: dict[str, Any] = {"load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="kv-disk-bench-") as scratch_name:
        scratch = Path(scratch_name)
        models = scratch / "models"
        models.mkdir()
        (models / "A.gguf").symlink_to(args.model.resolve())
        # --stall-timeout 0: on a busy machine one 1,500-token prefill step can outlast the
        # watchdog's 60 s, which would kill the worker in the middle of the first turn.
        common = ["--ctx-size", "4096", "--no-log-requests", "--models-max", "2", "--metrics"]
        common += ["--stall-timeout", "0"]
        for name in chosen:
            if name in ("worker", "router"):
                summary[name] = scenario_kill(models, common, scratch, name, args.turns)
            elif name == "interleaved":
                summary[name] = scenario_interleaved(models, common, scratch)
            else:
                summary[name] = scenario_decode(
                    models, common, scratch, args.blocks, args.max_tokens
                )
    summary["load_average_after"] = os.getloadavg()[0]
    for name in ("worker", "router"):
        if name in summary:
            for side in ("restore", "prefill", "uninterrupted"):
                summary[name][side].pop("text")
    print(json.dumps(summary, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
