"""``corral pull``, ``corral ls``, ``corral rm`` and ``corral ps`` (SPEC §7).

The first three work on the hub cache directly, no router needed (``pull`` runs the download
children's own code in this process); ``ps`` asks a running router.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

import httpx

from downloads.cache_files import (
    NotInCache,
    cached_model_sizes,
    human_size,
    remove_cached_model,
)
from downloads.selection import InvalidReference
from router.hub_cache import locate_cache_dir

if TYPE_CHECKING:
    from downloads.plan import DownloadPlan, PlannedFile

__all__ = ["CACHE_COMMANDS", "ProgressBar", "run_cache_command"]

_BAR_WIDTH = 30
_RUNNING = ("loading", "loaded", "sleeping", "downloading")


class ProgressBar:
    """One line per file: redrawn in place on a terminal, every tenth otherwise (logs, CI)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._shown: dict[str, int] = {}

    def __call__(self, plan: DownloadPlan, file: PlannedFile, done: int) -> None:
        percent = 100 * done // file.size if file.size else 100
        if not self._tty:
            if self._shown.get(file.path, -1) >= percent // 10:
                return
            self._shown[file.path] = percent // 10
        filled = _BAR_WIDTH * percent // 100
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        line = f"{file.path} [{bar}] {percent:3d}% {human_size(done)}/{human_size(file.size)}"
        end = "\n" if done >= file.size or not self._tty else ""
        self._stream.write(("\r" if self._tty else "") + line + end)
        self._stream.flush()


def _pull(args: argparse.Namespace) -> int:
    # Imported here: huggingface_hub is slow to import and only pull needs it.
    from downloads.runner import DOWNLOAD_ERRORS, run_download

    cache_dir = locate_cache_dir(os.environ)
    try:
        result = run_download(
            args.model, cache_dir, token=args.hf_token, on_progress=ProgressBar(sys.stderr)
        )
    except DOWNLOAD_ERRORS as exc:
        print(f"corral pull: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ncorral pull: interrupted; the same command resumes it", file=sys.stderr)
        return 130
    print(f"{result.plan.name}: {result.paths[0]}")
    return 0


def _ls(_: argparse.Namespace) -> int:
    cache_dir = locate_cache_dir(os.environ)
    models = cached_model_sizes(cache_dir)
    if not models:
        print(f"no models in the hub cache {cache_dir}", file=sys.stderr)
        return 0
    width = max(len(item.model.name) for item in models)
    for item in models:
        print(f"{item.model.name:<{width}}  {human_size(item.size):>9}  {item.model.path}")
    return 0


def _rm(args: argparse.Namespace) -> int:
    cache_dir = locate_cache_dir(os.environ)
    try:
        removed = remove_cached_model(cache_dir, args.model)
    except (NotInCache, InvalidReference) as exc:
        print(f"corral rm: {exc}", file=sys.stderr)
        return 1
    print(f"removed {args.model} ({len(removed)} files)")
    return 0


def _describe(entry: dict[str, Any]) -> str:
    status = entry.get("status", {})
    memory = entry.get("memory") or {}
    if "rss" in memory:
        return human_size(memory["rss"])
    progress = status.get("progress") or {}
    done = sum(item.get("done", 0) for item in progress.values())
    total = sum(item.get("total", 0) for item in progress.values())
    return f"{human_size(done)}/{human_size(total)}" if total else "-"


def _ps(args: argparse.Namespace) -> int:
    key = (args.api_key or "").split(",")[0].strip()  # LLAMA_API_KEY may list several
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(f"{args.url.rstrip('/')}/models", headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        print(f"corral ps: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        print(f"corral ps: {args.url} answered {response.status_code}", file=sys.stderr)
        return 1
    rows = [
        (str(entry["id"]), str(entry["status"]["value"]), _describe(entry))
        for entry in response.json()["data"]
        if entry.get("status", {}).get("value") in _RUNNING
    ]
    width = max([len("MODEL"), *(len(row[0]) for row in rows)])
    print(f"{'MODEL':<{width}}  {'STATUS':<11}  MEMORY (RSS) / DOWNLOADED")
    for name, status, detail in rows:
        print(f"{name:<{width}}  {status:<11}  {detail}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="corral")
    commands = parser.add_subparsers(dest="command", required=True)
    pull = commands.add_parser("pull", help="download a model into the hub cache")
    pull.add_argument("model", help="org/repo[:TAG]; without a tag Q4_K_M, else Q8_0, else first")
    pull.add_argument("-hft", "--hf-token", default=None, help="hub token [HF_TOKEN]")
    commands.add_parser("ls", help="list the hub cache's models with their sizes")
    rm = commands.add_parser("rm", help="delete one model's files from the hub cache")
    rm.add_argument("model", help="org/repo:TAG")
    ps = commands.add_parser("ps", help="models a running router has loaded, with memory")
    ps.add_argument("--url", default="http://127.0.0.1:8080", help="the router's address")
    ps.add_argument("--api-key", default=os.environ.get("LLAMA_API_KEY"), help="[LLAMA_API_KEY]")
    return parser


_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "pull": _pull,
    "ls": _ls,
    "rm": _rm,
    "ps": _ps,
}
CACHE_COMMANDS = frozenset(_HANDLERS)


def run_cache_command(command: str, argv: list[str]) -> int:
    args = _parser().parse_args([command, *argv])
    return _HANDLERS[args.command](args)
