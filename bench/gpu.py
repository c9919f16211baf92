"""Issue 26's GPU targets in one run: ``python -m bench.gpu --llama-server PATH``.

On a machine with an NVIDIA GPU, ``nvidia-smi``, a CUDA build of Corral's bindings and a
``llama-server`` built from the same llama.cpp (docs/benchmarks.md, GPU), with no network:

- **out of the box**: ``corral serve -m A`` against ``llama-server -m A``, no flags; one stream
  and 4 concurrent (target ≥ 0.95x);
- **same flags**: both with ``-ngl 99 -np 16 -c 65536``; one stream and 16 (target ≥ 1.0x);
- **swap**: ``--models-max 1 -ngl 99 -c 8192``, requests alternating between A and B, request →
  first token, against llama.cpp's router (``llama-server --models-dir``; target ≤ 0.5x);
- **bytes per device**: A and B loaded together (``-ngl 99 -c 8192``); for each, what
  ``/models`` says its worker holds on the GPUs (``memory.vram``) against what ``nvidia-smi``
  says that process uses (``--query-compute-apps=pid,used_memory``), and the ratio (target:
  within 5 %);
- **two models together**: A and B with default settings, both loaded at once, neither with
  layers spilled to the CPU (``meta.fit.spilled_layers``);
- **100 swaps**: the GPU's used memory after 100 alternating loads and a stop, against before;
  no worker process left.

A and B are GGUF files (``--model``, ``--model-b``; B defaults to a second name for A). A
measurement, not a test: it exits 0 whatever the figures, and prints them; nothing is written.
Without an NVIDIA GPU (no ``nvidia-smi``, or one that lists none) it says ``no GPU: skipped``
and exits 0 at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.support.comparison import Target, print_comparison
from bench.support.servers import DEFAULT_MODEL, Server, corral_router, llama_server, log
from bench.support.streams import measure_streams, one_stream

Figures = dict[str, float]
SAME_FLAGS = ["-ngl", "99", "-np", "16", "-c", "65536"]
SWAP_FLAGS = ["--models-max", "1", "-ngl", "99", "-c", "8192"]
TARGETS = {
    "single_tok_s": Target(0.95),
    "aggregate_4_tok_s": Target(0.95),
    "aggregate_16_tok_s": Target(1.0),
    "swap_s": Target(0.5, at_most=True),
    **{f"{name} gpu_mib": Target(0.95, within=True) for name in ("A", "B")},
}
# Both models on the GPU together, each with a context that leaves room for the other.
BYTES_FLAGS = ["-ngl", "99", "-c", "8192"]
_MIB = 1 << 20


def _smi(*query: str) -> list[list[str]]:
    done = subprocess.run(
        ["nvidia-smi", *query, "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return [[cell.strip() for cell in line.split(",")] for line in done.stdout.splitlines() if line]


def _gpu_used_mib() -> float:
    """Every GPU's used memory, summed (nvidia-smi)."""
    return sum(float(row[0]) for row in _smi("--query-gpu=memory.used"))


def _workers(router: Server) -> list[psutil.Process]:
    children = psutil.Process(router.process.pid).children(recursive=True)
    return [p for p in children if "worker" in p.cmdline() and "--spare" not in p.cmdline()]


def _first_token(url: str, model: str) -> float:
    async def run() -> float:
        async with httpx.AsyncClient(base_url=url, timeout=600) as client:
            return (await one_stream(client, 2, model)).ttft_s

    return asyncio.run(run())


def _models(url: str) -> dict[str, dict[str, Any]]:
    data = httpx.get(f"{url}/models", timeout=30).json()["data"]
    return {entry["id"]: entry for entry in data}


@contextmanager
def _two_models(a: Path, b: Path | None) -> Iterator[Path]:
    """A folder with A and B as ``A.gguf`` and ``B.gguf`` (links), as both routers list them."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "A.gguf").symlink_to(a.resolve())
        (Path(folder) / "B.gguf").symlink_to((b or a).resolve())
        yield Path(folder)


def _streams(url: str, max_tokens: int, rounds: int, concurrent: Sequence[int]) -> Figures:
    return asyncio.run(measure_streams(url, max_tokens, rounds, concurrent))


def out_of_the_box(binary: Path, model: Path, max_tokens: int, rounds: int) -> dict[str, Figures]:
    log("out of the box: corral serve -m A / llama-server -m A")
    with corral_router(["-m", str(model)]) as corral:
        ours = _streams(corral.url, max_tokens, rounds, (4,))
    with llama_server(binary, ["-m", str(model)]) as theirs_server:
        theirs = _streams(theirs_server.url, max_tokens, rounds, (4,))
    return {"corral": ours, "llama-server": theirs}


def same_flags(binary: Path, model: Path, max_tokens: int, rounds: int) -> dict[str, Figures]:
    log(f"same flags: {' '.join(SAME_FLAGS)}")
    with corral_router(["-m", str(model), *SAME_FLAGS]) as corral:
        ours = _streams(corral.url, max_tokens, rounds, (16,))
    with llama_server(binary, ["-m", str(model), *SAME_FLAGS]) as theirs_server:
        theirs = _streams(theirs_server.url, max_tokens, rounds, (16,))
    return {"corral": ours, "llama-server": theirs}


def _ping_pong(url: str, swaps: int) -> Figures:
    _first_token(url, "A")
    times = [_first_token(url, "B" if turn % 2 == 0 else "A") for turn in range(swaps)]
    return {"swap_s": statistics.median(times), "swap_max_s": max(times)}


def swap(binary: Path, models: Path, swaps: int) -> dict[str, Figures]:
    log(f"swap: {' '.join(SWAP_FLAGS)}, {swaps} swaps")
    with corral_router(["--models-dir", str(models), *SWAP_FLAGS]) as corral:
        ours = _ping_pong(corral.url, swaps)
    with llama_server(binary, ["--models-dir", str(models), *SWAP_FLAGS]) as theirs:
        return {"corral": ours, "llama.cpp router": _ping_pong(theirs.url, swaps)}


def _alias_pids(router: Server) -> dict[str, int]:
    """Each worker's process by the model it serves (its ``--alias``; no spare: a handed-over
    spare keeps the spare's command line)."""
    pids = {}
    for worker in _workers(router):
        argv = worker.cmdline()
        if "--alias" in argv:
            pids[argv[argv.index("--alias") + 1]] = worker.pid
    return pids


def vram_against_smi(
    entries: dict[str, dict[str, Any]], pids: dict[str, int], smi: dict[int, float]
) -> dict[str, Figures]:
    """For each loaded model: ``/models``' ``memory.vram`` (MiB) against ``nvidia-smi``'s figure
    for its worker's process (``--query-compute-apps=pid,used_memory``), and its ratio; the
    worker's own report (``meta.devices``: llama.cpp's weights, KV and compute buffers, no CUDA
    context) beside it."""
    ours: Figures = {}
    theirs: Figures = {}
    for name, entry in sorted(entries.items()):
        if entry["status"]["value"] != "loaded" or name not in pids:
            continue
        listed = (entry.get("memory") or {}).get("vram", 0) / _MIB
        seen = smi.get(pids[name], 0.0)
        buffers = sum(
            d["model_bytes"] + d["context_bytes"] + d["compute_bytes"]
            for d in entry["meta"]["devices"]
            if d["name"] != "CPU"
        )
        ours |= {f"{name} gpu_mib": listed, f"{name} buffers_mib": buffers / _MIB}
        theirs |= {f"{name} gpu_mib": seen, f"{name} buffers_mib": seen}
        ratio = listed / seen if seen else float("nan")
        log(f"  {name}: memory.vram {listed:.0f} MiB, nvidia-smi {seen:.0f} MiB, ratio {ratio:.3f}")
    return {"/models": ours, "nvidia-smi": theirs}


def _smi_processes() -> dict[int, float]:
    """MiB per process on all GPUs together, as ``nvidia-smi`` lists compute processes."""
    held: dict[int, float] = {}
    for pid, mib in _smi("--query-compute-apps=pid,used_memory"):
        held[int(pid)] = held.get(int(pid), 0.0) + float(mib)
    return held


def device_bytes(models: Path) -> dict[str, Figures]:
    """A and B loaded together; each one's ``memory.vram`` against ``nvidia-smi``."""
    log("bytes per device: each loaded model's /models memory.vram against nvidia-smi")
    flags = ["--models-dir", str(models), "--models-spare", "0", *BYTES_FLAGS]
    with corral_router(flags) as corral:
        _first_token(corral.url, "A")
        _first_token(corral.url, "B")
        entries, pids, smi = _models(corral.url), _alias_pids(corral), _smi_processes()
    for name, entry in entries.items():
        log(f"  {name} memory: {json.dumps(entry.get('memory'))}")
    return vram_against_smi(entries, pids, smi)


def gpu_present() -> bool:
    """Whether ``nvidia-smi`` is there and lists a GPU."""
    if shutil.which("nvidia-smi") is None:
        return False
    done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return done.returncode == 0 and "GPU" in done.stdout


def two_models(models: Path) -> dict[str, Figures]:
    log("two models with default settings")
    with corral_router(["--models-dir", str(models)]) as corral:
        _first_token(corral.url, "A")
        _first_token(corral.url, "B")
        entries = _models(corral.url)
        loaded = [name for name in ("A", "B") if entries[name]["status"]["value"] == "loaded"]
        spilled = sum(entries[name]["meta"]["fit"]["spilled_layers"] for name in loaded)
        n_ctx = [entries[name]["meta"]["n_ctx"] for name in loaded]
    log(f"  loaded {loaded}, n_ctx {n_ctx}, layers spilled to the CPU {spilled}")
    return {"corral": {"models_loaded": len(loaded), "spilled_layers": spilled}}


def hundred_swaps(models: Path, swaps: int) -> dict[str, Figures]:
    log(f"{swaps} swaps: GPU memory before and after, processes left")
    time.sleep(2)
    before = _gpu_used_mib()
    with corral_router(["--models-dir", str(models), *SWAP_FLAGS]) as corral:
        for turn in range(swaps):
            _first_token(corral.url, "A" if turn % 2 == 0 else "B")
        pids = [p.pid for p in psutil.Process(corral.process.pid).children(recursive=True)]
    time.sleep(2)  # the driver frees a dead process's memory a moment after it exits
    left = [pid for pid in pids if psutil.pid_exists(pid)]
    after = _gpu_used_mib()
    return {
        "corral": {"gpu_before_mib": before, "gpu_after_mib": after, "processes_left": len(left)}
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llama-server", type=Path, required=True, help="llama-server binary")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model A")
    parser.add_argument("--model-b", type=Path, help="model B (default: A under another name)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--swaps", type=int, default=10, help="swaps timed against llama.cpp")
    parser.add_argument("--soak", type=int, default=100, help="swaps before reading VRAM again")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if not gpu_present():
        log("no GPU: skipped (nvidia-smi is not there or lists no GPU)")
        if args.json:
            print(json.dumps({"skipped": "no GPU"}))
        return
    report: dict[str, dict[str, Figures]] = {}
    with _two_models(args.model, args.model_b) as models:
        steps: dict[str, Callable[[], dict[str, Figures]]] = {
            "out of the box": lambda: out_of_the_box(
                args.llama_server, args.model, args.max_tokens, args.rounds
            ),
            "same flags": lambda: same_flags(
                args.llama_server, args.model, args.max_tokens, args.rounds
            ),
            "swap": lambda: swap(args.llama_server, models, args.swaps),
            "bytes per device": lambda: device_bytes(models),
            "two models": lambda: two_models(models),
            "100 swaps": lambda: hundred_swaps(models, args.soak),
        }
        for title, step in steps.items():
            try:
                report[title] = step()
            except Exception as error:  # one failed step must not cost the others' figures
                log(f"{title}: FAILED: {error!r}")
            if title in report and not args.json:
                print(f"\n## {title}")
                print_comparison(report[title], TARGETS)
    if args.json:
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
