"""Command-line settings of a worker, spelled like llama-server's flags.

The per-model flags come from the router's option table (:mod:`corral.option_flags`), so every
option a preset can set is accepted here. Options the worker cannot honour yet are logged at
startup rather than silently ignored.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from corral.option_flags import add_model_flags, model_options_from

__all__ = ["WorkerSettings", "parse_worker_args", "worker_flags"]

# Accepted so that presets written for llama-server load, but not acted on yet.
NOT_YET_SUPPORTED = ("jinja", "webui")


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    model: Path
    alias: str  # the model's id: the first of its names in sorted order, as llama-server's
    aliases: tuple[str, ...] = ()  # every --alias name (a comma list, as llama-server takes)
    host: str = "127.0.0.1"
    port: int = 0
    ctx_size: int = 4096
    threads: int | None = None
    batch_size: int = 512
    ubatch_size: int = 512
    n_gpu_layers: int = 0
    n_predict: int = -1
    temperature: float = 0.8
    seed: int = -1
    chat_template: str | None = None
    use_mmap: bool = True
    use_mlock: bool = False
    flash_attn: str = "auto"  # on, off or auto
    parallel: int = 1
    sleep_idle_seconds: float | None = None  # free the weights after this long without work
    embeddings: bool = False
    pooling: str | None = None  # none, mean, cls, last, rank; None: the model's own
    reranking: bool = False  # implies embeddings and rank pooling, as upstream's --reranking
    rope_freq_base: float = 0.0
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    metrics: bool = False  # /metrics answers 501 without it, as llama-server's --metrics
    slots: bool = True  # /slots answers 501 with --no-slots
    context_shift: bool = False
    keep: int = 0  # prompt tokens a context shift keeps; -1: all
    ignored: dict[str, str] = field(default_factory=dict)


def _sleep_after(value: str | None) -> float | None:
    # -1, as upstream, means never; the option table has already refused 0 and other negatives.
    return None if value is None or value == "-1" else float(value)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m worker", description="Serve one GGUF model.")
    parser.add_argument("-m", "--model", type=Path, required=True, help="GGUF file to serve")
    parser.add_argument(
        "-a", "--alias", help="model id to report, or a comma list of names (default: file stem)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (reported)")
    add_model_flags(parser)
    return parser


def worker_flags() -> frozenset[str]:
    """Every flag spelling the worker accepts, so that a llama-server command line can be
    narrowed to the worker's (scripts/run_llama_server_tests.py)."""
    return frozenset(_parser()._option_string_actions)


def parse_worker_args(argv: list[str] | None = None) -> WorkerSettings:
    parser = _parser()
    args = parser.parse_args(argv)
    # A worker reads only its flags: the router renders every option explicitly.
    options = model_options_from(args, parser, env={})
    model: Path = args.model
    names = [name.strip() for name in (args.alias or "").split(",") if name.strip()]

    def number(name: str, default: float) -> float:
        return float(options[name]) if name in options else default

    gpu_layers = options.get("n-gpu-layers", "0")
    # Upstream's --reranking sets embedding=true and pooling=rank; the flag beats --pooling here,
    # since a worker's flags come rendered in table order, not in the order a user wrote them.
    reranking = options.get("reranking", "false") == "true"
    return WorkerSettings(
        model=model,
        alias=min(names) if names else model.stem,
        aliases=tuple(sorted(set(names))),
        host=args.host,
        port=args.port,
        ctx_size=int(number("ctx-size", 4096)),
        threads=int(options["threads"]) if "threads" in options else None,
        batch_size=int(number("batch-size", 512)),
        ubatch_size=int(number("ubatch-size", 512)),
        n_gpu_layers=-1 if gpu_layers in ("auto", "all") else int(gpu_layers),
        n_predict=int(number("n-predict", -1)),
        temperature=number("temp", 0.8),
        seed=int(number("seed", -1)),
        chat_template=options.get("chat-template"),
        use_mmap=options.get("mmap", "true") == "true",
        use_mlock=options.get("mlock", "false") == "true",
        flash_attn=options.get("flash-attn", "auto"),
        parallel=max(int(number("parallel", 1)), 1),
        sleep_idle_seconds=_sleep_after(options.get("sleep-idle-seconds")),
        embeddings=reranking or options.get("embeddings", "false") == "true",
        pooling="rank" if reranking else options.get("pooling"),
        reranking=reranking,
        rope_freq_base=number("rope-freq-base", 0.0),
        cache_type_k=options.get("cache-type-k"),
        cache_type_v=options.get("cache-type-v"),
        metrics=options.get("metrics", "false") == "true",
        slots=options.get("slots", "true") == "true",
        context_shift=options.get("context-shift", "false") == "true",
        keep=int(number("keep", 0)),
        ignored={name: options[name] for name in NOT_YET_SUPPORTED if name in options},
    )
