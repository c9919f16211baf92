"""Returning to a conversation after its model was evicted: ``python -m bench.kv_restore``.

Two routers run the same script one after the other, each with ``--models-max 1``: one keeps
slot caches across stops (the default), the other is started with ``--no-kv-persist``. In each
round a ~1,500-token conversation is sent to model A, then any request to model B evicts A,
then A is loaded again (``POST /models/load``, waited for: the model load is excluded) and the
conversation's next turn is sent. The figure is the time to its first streamed token: restoring
the saved cache against prefilling the whole conversation again. This is a measurement, not a
test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.proxy_overhead import Router

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
TARGET_RATIO = 10.0
# Filler that reads like a conversation; repeated until the prompt reaches the wanted size.
_TOPICS = (
    "the history of lighthouses and the people who kept them",
    "how bread rises and why some loaves stay flat",
    "the rules of chess openings and a few famous traps",
    "planning a garden that flowers from spring to autumn",
    "why the sky changes colour at sunset",
    "how a bicycle stays upright while moving",
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def conversation(turns: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "You are a patient, thorough assistant."}]
    for turn in range(turns):
        topic = _TOPICS[turn % len(_TOPICS)]
        messages.append({"role": "user", "content": f"Tell me about {topic}, in some detail."})
        messages.append(
            {
                "role": "assistant",
                "content": f"Here is an overview of {topic}. " * 6
                + "It has a long story, many small details and a few surprises along the way.",
            }
        )
    messages.append({"role": "user", "content": "Which of these would make the best story?"})
    return messages


def wait_loaded(client: httpx.Client, model: str) -> None:
    client.post("/models/load", json={"model": model})
    while True:  # a load takes seconds; polling the list every 50 ms costs nothing here
        entry = next(m for m in client.get("/models").json()["data"] if m["id"] == model)
        if entry["status"]["value"] == "loaded":
            return
        time.sleep(0.05)


def ask(
    client: httpx.Client, model: str, messages: list[dict[str, str]]
) -> tuple[float, str, dict[str, Any]]:
    """Time to the first streamed token, the answer, and the worker's timings."""
    body = {"model": model, "messages": messages, "max_tokens": 16, "temperature": 0}
    started = time.perf_counter()
    first = 0.0
    text: list[str] = []
    timings: dict[str, Any] = {}
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as r:
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            timings = chunk.get("timings", timings)
            for choice in chunk.get("choices", []):
                if choice["delta"].get("content"):
                    first = first or time.perf_counter() - started
                    text.append(choice["delta"]["content"])
    return first, "".join(text), timings


def one_round(client: httpx.Client, messages: list[dict[str, str]]) -> tuple[float, dict[str, Any]]:
    wait_loaded(client, "A")
    _, answer, _ = ask(client, "A", messages)
    ask(client, "B", [{"role": "user", "content": "Hello."}])  # evicts A
    wait_loaded(client, "A")  # the load is not part of the figure
    follow_up = [
        *messages,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "Why?"},
    ]
    ttft, _, timings = ask(client, "A", follow_up)
    return ttft, timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=11, help="conversation turns (~1,500 tokens)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if not args.model.is_file():
        sys.exit(f"{args.model} not found: run `python3 scripts/bootstrap.py --default-model`")
    messages = conversation(args.turns)
    results: dict[str, list[float]] = {"restore": [], "prefill": []}
    cached: dict[str, list[int]] = {"restore": [], "prefill": []}
    with tempfile.TemporaryDirectory(prefix="kv-restore-bench-") as scratch:
        models = Path(scratch) / "models"
        models.mkdir()
        for name in ("A", "B"):  # one file under two names: two models, one page cache
            (models / f"{name}.gguf").symlink_to(args.model.resolve())
        common = ["--models-max", "1", "--ctx-size", "4096", "--no-log-requests"]
        prompt_tokens = 0
        for round_ in range(args.rounds):
            sides = {  # a fresh cache folder per round: nothing saved by an earlier round
                "restore": [*common, "--kv-cache-dir", str(Path(scratch) / f"kv-{round_}")],
                "prefill": [*common, "--no-kv-persist"],
            }
            for side, side_args in sides.items():
                router = Router(models, side_args)
                try:
                    with httpx.Client(base_url=router.url, timeout=600) as client:
                        ttft, timings = one_round(client, messages)
                finally:
                    router.stop()
                results[side].append(ttft)
                cached[side].append(int(timings.get("cache_n", -1)))
                prompt_tokens = int(timings.get("cache_n", 0)) + int(timings.get("prompt_n", 0))
                log(f"round {round_ + 1} {side}: first token after {ttft * 1000:.0f} ms, "
                    f"cache_n {cached[side][-1]} of {prompt_tokens} prompt tokens")  # fmt: skip
    restore = statistics.median(results["restore"])
    prefill = statistics.median(results["prefill"])
    ratio = prefill / restore if restore else float("inf")
    summary = {
        "prompt_tokens": prompt_tokens,
        "restore_ttft_ms": round(restore * 1000, 1),
        "prefill_ttft_ms": round(prefill * 1000, 1),
        "speedup": round(ratio, 1),
        "target": TARGET_RATIO,
        "met": ratio >= TARGET_RATIO,
        "cache_n": cached,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"conversation of {prompt_tokens} tokens, median of {args.rounds} rounds")
        print(f"  first token, restored cache : {summary['restore_ttft_ms']:8.1f} ms")
        print(f"  first token, re-prefilled   : {summary['prefill_ttft_ms']:8.1f} ms")
        print(f"  restore is {ratio:.1f}x faster (target >= {TARGET_RATIO:.0f}x): "
              f"{'met' if summary['met'] else 'NOT met'}")  # fmt: skip


if __name__ == "__main__":
    main()
