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
from pathlib import Path

from bench.support.comparison import Target, print_comparison
from bench.support.servers import corral_worker, llama_server
from bench.support.streams import add_stream_flags, measure_streams, worker_flags

TARGETS = {
    "single_tok_s": Target(0.95),
    "aggregate_4_tok_s": Target(0.90),
    "aggregate_8_tok_s": Target(0.90),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--llama-server", type=Path, help="llama-server binary to compare with")
    add_stream_flags(parser, slots=8, ctx_size=8192)
    args = parser.parse_args()
    flags = worker_flags(args)
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
