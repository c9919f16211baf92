"""Speculative decoding's speed: ``python -m bench.speculative [--quick]``.

One worker per setting, the same GGUF, threads and slots: plain decoding, the model as its own
draft (every guess is right, so what remains is the pipeline's cost: the draft model's decodes
and the wider verification batches), and prompt lookup (``ngram-simple``) on a prompt that
asks for text to be repeated. Greedy decoding, one stream and then several at once; decode
tokens/s from the worker's own timings, and each setting's ratio to plain decoding. Every
worker runs from the start and the settings take turns, run after run, so a machine whose load
changes meanwhile weighs on all of them alike. With
``--draft FILE`` a real draft model (same vocabulary, smaller) is measured too. A measurement,
not a test: it exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.support.servers import DEFAULT_MODEL, corral_worker, log

STORY = "Write a long story about a lighthouse keeper."
# Prompt lookup needs text that repeats what came before: quoting a passage back.
PASSAGE = (
    "The keeper climbed the stairs at dusk, lit the lamp, wound the clockwork, wiped the glass "
    "and wrote the time, the weather and the ships he saw in the log."
)
REPEAT = f"Repeat this passage three times, word for word:\n{PASSAGE}"


@dataclass
class Figures:
    tokens_per_second: float  # decode tokens/s of one stream, median over the runs
    aggregate: float  # tokens/s of all streams together (median over the runs)
    accepted: str  # guesses kept / made, in the concurrent requests


def _chat(url: str, prompt: str, tokens: int) -> dict[str, Any]:
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
    }
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=600)
    response.raise_for_status()
    timings: dict[str, Any] = response.json()["timings"]
    return timings


def _single(url: str, prompt: str, tokens: int) -> float:
    return float(_chat(url, prompt, tokens)["predicted_per_second"])


def _together(url: str, prompt: str, tokens: int, streams: int) -> tuple[float, list[Any]]:
    """Tokens/s of ``streams`` requests at once, from the first sent to the last answered."""
    with ThreadPoolExecutor(streams) as pool:
        started = time.perf_counter()
        timings = list(pool.map(lambda _: _chat(url, prompt, tokens), range(streams)))
        elapsed = time.perf_counter() - started
    return sum(t["predicted_n"] for t in timings) / elapsed, timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--draft", type=Path, help="a real draft model to measure as well")
    parser.add_argument("--threads", type=int, default=max((os.cpu_count() or 2) // 2, 1))
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="64 tokens, 1 run, 2 streams")
    args = parser.parse_args()
    if args.quick:
        args.tokens, args.runs, args.streams = 64, 1, 2
    model = str(args.model)
    settings: list[tuple[str, str, tuple[str, ...]]] = [
        ("plain", STORY, ()),
        ("self-draft, n-max 4", STORY, ("--model-draft", model, "--spec-draft-n-max", "4")),
        ("self-draft, n-max 16", STORY, ("--model-draft", model, "--spec-draft-n-max", "16")),
        ("plain, repeat prompt", REPEAT, ()),
        ("ngram-simple, repeat prompt", REPEAT, ("--spec-type", "ngram-simple")),
    ]
    if args.draft is not None:
        settings.append(("draft " + args.draft.name, STORY, ("--model-draft", str(args.draft))))
    ctx = 1024 * args.streams
    singles: dict[str, list[float]] = {name: [] for name, _, _ in settings}
    aggregates: dict[str, list[float]] = {name: [] for name, _, _ in settings}
    guesses: dict[str, list[int]] = {name: [0, 0] for name, _, _ in settings}
    with ExitStack() as workers:
        flags = ("--threads", str(args.threads), "--parallel", str(args.streams), "--ctx-size")
        urls = {
            name: workers.enter_context(corral_worker(args.model, (*flags, str(ctx), *extra))).url
            for name, _, extra in settings
        }
        for name, prompt, _ in settings:
            _chat(urls[name], prompt, 8)  # warm-up
        for run in range(args.runs):
            log(f"run {run + 1} of {args.runs} ...")
            for name, prompt, _ in settings:
                singles[name].append(_single(urls[name], prompt, args.tokens))
                rate, timings = _together(urls[name], prompt, args.tokens, args.streams)
                aggregates[name].append(rate)
                guesses[name][0] += sum(t.get("draft_n_accepted", 0) for t in timings)
                guesses[name][1] += sum(t.get("draft_n", 0) for t in timings)
    results = {
        name: Figures(
            tokens_per_second=statistics.median(singles[name]),
            aggregate=statistics.median(aggregates[name]),
            accepted=f"{kept}/{made}" if (made := guesses[name][1]) else "—",
        )
        for name, (kept, _) in guesses.items()
    }
    print(
        f"{args.model.name}, {args.tokens} tokens, {args.threads} threads, "
        f"{args.streams} slots; ratios to plain decoding of the same prompt"
    )
    print(f"{'setting':30} {'1 stream tok/s':>15} {'ratio':>6} {f'{args.streams} streams':>11} "
          f"{'ratio':>6} {'kept/guessed':>14}")  # fmt: skip
    for name, figures in results.items():
        base = results["plain, repeat prompt" if "repeat" in name else "plain"]
        print(
            f"{name:30} {figures.tokens_per_second:15.1f} "
            f"{figures.tokens_per_second / base.tokens_per_second:6.2f} "
            f"{figures.aggregate:11.1f} {figures.aggregate / base.aggregate:6.2f} "
            f"{figures.accepted:>14}"
        )


if __name__ == "__main__":
    main()
