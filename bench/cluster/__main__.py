"""``python -m bench.cluster``: the flags, and the report of :func:`bench.cluster.measure.run`."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench.cluster import __doc__ as ABOUT
from bench.cluster.measure import FULL, QUICK, run
from bench.support.servers import DEFAULT_MODEL, log


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cluster", description=ABOUT.splitlines()[0] if ABOUT else None
    )
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="the GGUF both serve")
    parser.add_argument("--max-tokens", type=int, help="tokens per stream (128)")
    parser.add_argument("--rounds", type=int, help="streams per model per turn (3)")
    parser.add_argument("--blocks", type=int, help="ABBA blocks of turns (2)")
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    parser.add_argument("serve_args", nargs="*", help="after --: flags for corral serve")
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else FULL
    settings = {key: getattr(args, key, None) or value for key, value in defaults.items()}
    with tempfile.TemporaryDirectory(prefix="corral-bench-") as tmp:
        summary = run(args.model, args.serve_args, settings, Path(tmp))
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    decode, failover = summary["decode"], summary["failover"]
    print(f"model {summary['model']}; near: on the head (the router's node), far: on node far")
    print(f"{'':30}{'far':>10}{'near':>10}{'ratio':>10}  {'target':<10}met")
    print(
        f"{'decode, median (tok/s)':30}{decode['far_tok_s']:>10.1f}{decode['near_tok_s']:>10.1f}"
        f"{decode['ratio']:>10.3f}  {'>= 0.97':<10}{'yes' if decode['target_met'] else 'NO'}"
    )
    print(
        f"{'node death -> next 200 (s)':30}{failover['seconds']:>10.2f}{'':>20}  "
        f"{'<= 15 s':<10}{'yes' if failover['target_met'] else 'NO'}"
    )
    log(
        f"{decode['streams_each']} streams each; after the death, {len(failover['errors_before'])}"
        f" answer(s) before the 200 {failover['errors_before']}, answered from "
        f"{failover['answered_from']}"
    )


if __name__ == "__main__":
    main()
