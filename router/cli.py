"""The ``corral`` command. Flags are spelled as llama-server's, with ``LLAMA_ARG_*`` fallbacks."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from corral.hub.cache_layout import locate_cache_dir
from corral.option_flags import add_model_flags, model_options_from
from corral.options import parse_size
from router.corral_commands import CACHE_COMMANDS, run_cache_command
from router.security import ApiKeyFileError, load_api_keys, parse_list
from router.settings import ServeSettings

__all__ = ["main", "parse_serve_args"]

_TRUE = {"1", "true", "on", "enabled"}
_FALSE = {"0", "false", "off", "disabled"}


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def _env_bool(name: str, default: bool) -> bool:
    value = (_env(name) or "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return default


def _flag_or_env(values: list[str] | None, name: str) -> list[str]:
    # Repeatable flags cannot take their default from the environment: argparse would append
    # the flag's values to it instead of replacing it.
    if values is not None:
        return values
    value = _env(name)
    return [value] if value else []


def _serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="corral serve", description="Serve every local model.")
    parser.add_argument("--host", default=_env("LLAMA_ARG_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(_env("LLAMA_ARG_PORT", "8080") or 8080))
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=_env("LLAMA_ARG_MODELS_DIR"),
        help="directory of .gguf files and model subdirectories",
    )
    parser.add_argument(
        "-m",
        "--model",
        dest="model_files",
        type=Path,
        action="append",
        default=[],
        help="add this GGUF file and load it at startup",
    )
    parser.add_argument(
        "--models-max",
        type=int,
        default=int(_env("LLAMA_ARG_MODELS_MAX", "4") or 4),
        help="models loaded at once (<=0: unlimited)",
    )
    parser.add_argument(
        "--models-memory-max",
        default=_env("CORRAL_MODELS_MEMORY_MAX"),
        metavar="SIZE",
        help="memory the running models may hold, e.g. 24G (evicts idle models to fit; "
        "default: no limit)",
    )
    parser.add_argument(
        "--models-autoload",
        action=argparse.BooleanOptionalAction,
        # As upstream, LLAMA_ARG_NO_MODELS_AUTOLOAD set to anything turns autoload off.
        default=_env("LLAMA_ARG_NO_MODELS_AUTOLOAD") is None
        and _env_bool("LLAMA_ARG_MODELS_AUTOLOAD", True),
        help="load a model on its first request",
    )
    parser.add_argument(
        "--api-key",
        dest="api_keys",
        action="append",
        help="API key clients must send; comma-separated, repeatable [LLAMA_API_KEY]",
    )
    parser.add_argument(
        "--api-key-file",
        dest="api_key_files",
        action="append",
        help="file of API keys, one per line, '#' comments [LLAMA_ARG_API_KEY_FILE]",
    )
    parser.add_argument(
        "--cors-origins",
        default=_env("LLAMA_ARG_CORS_ORIGINS", "*"),
        help="origins browsers may call from, comma-separated; 'localhost' = loopback only",
    )
    parser.add_argument(
        "-hf",
        "-hfr",
        "--hf-repo",
        dest="hf_repos",
        action="append",
        help="add this hub-cache model (org/repo[:TAG]) and load it at startup [LLAMA_ARG_HF_REPO]",
    )
    parser.add_argument(
        "-to",
        "--timeout",
        type=float,
        default=float(_env("LLAMA_ARG_TIMEOUT", "3600") or 3600),
        help="seconds a worker may stay silent within one response (default 3600)",
    )
    parser.add_argument(
        "--stall-timeout",
        type=float,
        default=float(_env("CORRAL_STALL_TIMEOUT", "60") or 60),
        metavar="SECONDS",
        help="kill a worker with requests in flight that shows no progress this long "
        "(0: never; default 60)",
    )
    parser.add_argument(
        "--load-timeout",
        type=float,
        default=float(_env("CORRAL_LOAD_TIMEOUT", "600") or 600),
        metavar="SECONDS",
        help="kill a loading worker that reports no progress this long (0: never; default 600)",
    )
    parser.add_argument(
        "--max-queue",
        type=int,
        default=int(_env("CORRAL_MAX_QUEUE", "512") or 512),
        metavar="N",
        help="requests that may wait for model loads at once; more get 503 (0: no limit; "
        "default 512)",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        default=_env_bool("LLAMA_ARG_OFFLINE", False),
        help="never contact the hub (downloads are refused)",
    )
    parser.add_argument(
        "-hft",
        "--hf-token",
        default=None,
        help="hub token for downloads; given to download processes only [HF_TOKEN]",
    )
    parser.add_argument(
        "--models-preset",
        type=Path,
        default=_env("LLAMA_ARG_MODELS_PRESET"),
        help="llama.cpp preset INI: per-model options, aliases, tags, ttl, pin",
    )
    add_model_flags(parser)
    return parser


def parse_serve_args(argv: list[str]) -> ServeSettings:
    parser = _serve_parser()
    args = parser.parse_args(argv)
    if args.models_dir is not None and not Path(args.models_dir).is_dir():
        parser.error(f"--models-dir {args.models_dir} is not a directory")
    for path in args.model_files:
        if not path.is_file():
            parser.error(f"-m {path}: no such file")
    try:
        api_keys = load_api_keys(
            _flag_or_env(args.api_keys, "LLAMA_API_KEY"),
            [Path(f) for f in _flag_or_env(args.api_key_files, "LLAMA_ARG_API_KEY_FILE")],
        )
    except ApiKeyFileError as exc:
        parser.error(str(exc))
    memory_max = 0
    if args.models_memory_max:
        try:
            memory_max = parse_size(args.models_memory_max)
        except ValueError as exc:
            parser.error(f"--models-memory-max: {exc}")
    timeouts = {"--stall-timeout": args.stall_timeout, "--load-timeout": args.load_timeout}
    for flag, value in timeouts.items():
        if value < 0:
            parser.error(f"{flag} must be 0 (never) or a number of seconds")
    if args.max_queue < 0:
        parser.error("--max-queue must be 0 (no limit) or a number of requests")
    if args.models_preset is not None and not Path(args.models_preset).is_file():
        parser.error(f"--models-preset {args.models_preset}: no such file")
    return ServeSettings(
        host=args.host,
        port=args.port,
        models_dir=Path(args.models_dir) if args.models_dir else None,
        model_files=args.model_files,
        models_max=args.models_max,
        models_memory_max=memory_max,
        models_autoload=args.models_autoload,
        models_preset=Path(args.models_preset) if args.models_preset else None,
        hf_repos=tuple(_flag_or_env(args.hf_repos, "LLAMA_ARG_HF_REPO")),
        timeout=args.timeout,
        stall_timeout=args.stall_timeout,
        load_timeout=args.load_timeout,
        max_queue=args.max_queue,
        offline=args.offline,
        cache_dir=locate_cache_dir(os.environ),
        model_options=model_options_from(args, parser),
        api_keys=api_keys,
        cors_origins=tuple(parse_list(args.cors_origins)),
        hf_token=args.hf_token or _env("HF_TOKEN"),
    )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: corral serve [options]   (corral serve --help for the options)")
        print("       corral pull REPO[:TAG] | ls | rm REPO:TAG | ps [--url URL]")
        sys.exit(0 if argv else 2)
    command, rest = argv[0], argv[1:]
    if command in CACHE_COMMANDS:
        sys.exit(run_cache_command(command, rest))
    if command != "serve":
        print(f"corral: unknown command '{command}'", file=sys.stderr)
        sys.exit(2)
    from router.server import serve

    try:
        serve(parse_serve_args(rest))
    except KeyboardInterrupt:
        # uvicorn re-raises SIGINT after its graceful shutdown; the workers are already stopped.
        sys.exit(130)
