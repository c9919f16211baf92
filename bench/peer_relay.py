"""What a peer hop costs: ``python -m bench.peer_relay --model-file M.gguf [--quick] [--json]``.

Two routers: ``far`` serves the model, ``near`` has no model of its own and peers ``far``
(docs/scaling.md). Streams go to ``far`` directly and through ``near``, alternating (ABBA), with
bench/proxy_overhead.py's streams and counting; ``near``'s CPU time is the cost of relaying.
This is a measurement, not a test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.proxy_overhead import FULL, QUICK, Router, Run, log, throughput

TARGET_RATIO = 0.97


def _wait_listed(router: Router, model: str) -> None:
    """``near`` lists its peer in the background; a bench may poll for it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        entries = httpx.get(f"{router.url}/models", timeout=30).json()["data"]
        if any(e["id"] == model and e["status"]["value"] == "remote" for e in entries):
            return
        time.sleep(0.2)
    raise RuntimeError(f"near never listed {model} from its peer")


async def _measure(near: Router, far: Router, settings: dict[str, int], model: str) -> Any:
    limits = httpx.Limits(max_connections=settings["streams"] + 4)
    timeout = httpx.Timeout(600.0, connect=10.0)
    async with (
        httpx.AsyncClient(base_url=near.url, timeout=timeout, limits=limits) as routed,
        httpx.AsyncClient(base_url=far.url, timeout=timeout, limits=limits) as direct,
    ):
        log(f"loading {model} on far ...")
        (await direct.post("/tokenize", json={"model": model, "content": "x"})).raise_for_status()
        targets = {"routed": routed, "direct": direct}
        run = Run(targets, near.cpu_seconds, near.loop_cpu_seconds, model, settings)
        summary: dict[str, Any] = {"model": model}
        for key, streams in (("single_stream", 1), ("concurrent", settings["streams"])):
            log(f"{streams} stream(s) at once ...")
            result = await throughput(run, streams)
            result["target_met"] = result["ratio"] >= TARGET_RATIO
            summary[key] = result
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model-file", type=Path, required=True, help="the GGUF far serves")
    parser.add_argument("--max-tokens", type=int, help="tokens per stream (128)")
    parser.add_argument("--rounds", type=int, help="streaming rounds per target (3)")
    parser.add_argument("--streams", type=int, help="concurrent streams (32)")
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    parser.add_argument("serve_args", nargs="*", help="after --: flags for far's corral serve")
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else FULL
    settings = {key: getattr(args, key, None) or value for key, value in defaults.items()}
    model = args.model_file.stem
    with tempfile.TemporaryDirectory(prefix="corral-bench-") as tmp:
        models, empty = Path(tmp) / "models", Path(tmp) / "empty"
        models.mkdir()
        empty.mkdir()
        (models / args.model_file.name).symlink_to(args.model_file.resolve())
        far = Router(models, args.serve_args)
        near = None
        try:
            preset = Path(tmp) / "peers.ini"
            preset.write_text(f"[peer far]\nurl = {far.url}\nmodels = {model}\n")
            near = Router(empty, ["--models-preset", str(preset)])
            _wait_listed(near, model)
            summary = asyncio.run(_measure(near, far, settings, model))
        finally:
            if near is not None:
                near.stop()
            far.stop()
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"model {model}; near relays to far (its peer); 'direct' is far itself")
    print(f"{'':22}{'via peer':>10}{'direct':>10}{'ratio':>10}  {'target':<10}met")
    for result in (summary["single_stream"], summary["concurrent"]):
        print(
            f"{str(result['streams']) + ' stream(s) (tok/s)':22}{result['routed_tps']:>10.1f}"
            f"{result['direct_tps']:>10.1f}{result['ratio'] * 100:>8.1f} %  "
            f"{'>= 97 %':<10}{'yes' if result['target_met'] else 'NO'}"
        )
        log(f"near CPU: {result['router_cpu_ms_per_token']:.2f} ms per relayed token")


if __name__ == "__main__":
    main()
