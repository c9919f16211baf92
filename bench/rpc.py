"""ggml RPC on loopback against the same worker local: ``python -m bench.rpc [--quick]``.

One GGUF, one run: a worker handing every layer to a ``corral rpc-server`` on 127.0.0.1
(``--rpc``) and a worker computing every layer itself, both running, measured in turn (ABBA)
with bench/support/streams.py's streams (single-stream decode tokens/s, time to first token,
aggregate tokens/s with 4 streams). No target: loopback is not a network, so this shows the
protocol's own cost (every token's graph and activations cross a socket); over a real network
latency adds to it. A measurement, not a test: it exits 0 whatever the figures."""

from __future__ import annotations

import argparse
import json

from bench.support.comparison import print_comparison
from bench.support.servers import corral_worker, rpc_server
from bench.support.streams import add_stream_flags, measure_in_turn, worker_flags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_stream_flags(parser, slots=4, ctx_size=4096)
    args = parser.parse_args()
    flags = worker_flags(args)
    with (
        rpc_server(args.threads) as endpoint,
        corral_worker(args.model, [*flags, "--rpc", endpoint]) as remote,
        corral_worker(args.model, flags) as local,
    ):
        urls = {"rpc-loopback": remote.url, "local": local.url}
        results = measure_in_turn(urls, args.max_tokens, args.rounds)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print_comparison(results, targets={})


if __name__ == "__main__":
    main()
