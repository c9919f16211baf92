"""Command-line settings of a worker, spelled like llama-server's flags."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WorkerSettings", "parse_worker_args"]


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    model: Path
    alias: str
    host: str = "127.0.0.1"
    port: int = 0
    ctx_size: int = 4096
    threads: int | None = None
    batch_size: int = 512
    n_gpu_layers: int = 0
    n_predict: int = -1
    temperature: float = 0.8
    seed: int = -1
    chat_template: str | None = None


def parse_worker_args(argv: list[str] | None = None) -> WorkerSettings:
    parser = argparse.ArgumentParser(prog="python -m worker", description=__doc__)
    parser.add_argument("-m", "--model", type=Path, required=True, help="GGUF file to serve")
    parser.add_argument("-a", "--alias", help="model id to report (default: file stem)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (reported)")
    parser.add_argument("-c", "--ctx-size", type=int, default=4096)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("-b", "--batch-size", type=int, default=512)
    parser.add_argument("-ngl", "--n-gpu-layers", "--gpu-layers", type=int, default=0)
    parser.add_argument("-n", "--n-predict", type=int, default=-1)
    parser.add_argument("--temp", type=float, default=0.8)
    parser.add_argument("-s", "--seed", type=int, default=-1)
    parser.add_argument("--chat-template", default=None)
    args = parser.parse_args(argv)
    model: Path = args.model
    return WorkerSettings(
        model=model,
        alias=args.alias or model.stem,
        host=args.host,
        port=args.port,
        ctx_size=args.ctx_size,
        threads=args.threads,
        batch_size=args.batch_size,
        n_gpu_layers=args.n_gpu_layers,
        n_predict=args.n_predict,
        temperature=args.temp,
        seed=args.seed,
        chat_template=args.chat_template,
    )
