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
from pathlib import Path

from bench.comparison import Target, print_comparison
from bench.servers import DEFAULT_MODEL, corral_worker, llama_server, log
from bench.streams import measure_streams

TARGETS = {
    "single_tok_s": Target(0.95),
    "aggregate_4_tok_s": Target(0.90),
    "aggregate_8_tok_s": Target(0.90),
}


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
    log(
        f"model {args.model.name}, {args.threads} threads, {args.slots} slots, "
        f"ctx {args.ctx_size}, {args.max_tokens} tokens per stream"
    )
    flags = ["--threads", str(args.threads), "--parallel", str(args.slots)]
    flags += ["--ctx-size", str(args.ctx_size)]
    results: dict[str, dict[str, float]] = {}
    with corral_worker(args.model, flags) as server:
        results["corral"] = asyncio.run(measure_streams(server.url, args.max_tokens, args.rounds))
    if args.llama_server is not None:
        with llama_server(args.llama_server, ["--model", str(args.model), *flags]) as server:
            results["llama-server"] = asyncio.run(
                measure_streams(server.url, args.max_tokens, args.rounds)
            )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print_comparison(results, TARGETS)


if __name__ == "__main__":
    main()
