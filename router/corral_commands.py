"""``corral pull``, ``corral ls``, ``corral rm`` and ``corral ps`` (docs/protocol.md §7).

The first three work on the hub cache directly, no router needed: ``pull`` runs the same
download child a router starts for ``POST /models`` (``python -m downloads``) and draws its
progress; ``ps`` asks a running router.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import IO, Any, TextIO

import httpx
import msgspec

from corral.children.download_payloads import (
    DOWNLOADING_STATE,
    DownloadOutcome,
    DownloadProgress,
    decode_download_payload,
)
from corral.children.environment import child_environment
from corral.children.protocol import EXIT_COMMAND, LineSplitter, StateMessage, parse_line
from corral.hub.cache_layout import locate_cache_dir
from corral.hub.cache_scan import resolve_cached_model, scan_cache
from corral.hub.names import InvalidReference
from corral.hub.removal import NotInCache, remove_cached_model
from corral.hub.sizes import cached_model_sizes, human_size
from router.cli_help import COMMAND_SUMMARIES, SuggestingParser

__all__ = ["CACHE_COMMANDS", "ProgressBar", "run_cache_command"]

_BAR_WIDTH = 30
_RUNNING = ("loading", "loaded", "sleeping", "downloading")


class ProgressBar:
    """One line per file: redrawn in place on a terminal, every tenth otherwise (logs, CI)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._shown: dict[str, int] = {}

    def __call__(self, progress: DownloadProgress) -> None:
        name, done, size = progress.path or progress.url, progress.downloaded, progress.total
        percent = 100 * done // size if size else 100
        if not self._tty:
            if self._shown.get(name, -1) >= percent // 10:
                return
            self._shown[name] = percent // 10
        filled = _BAR_WIDTH * percent // 100
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        line = f"{name} [{bar}] {percent:3d}% {human_size(done)}/{human_size(size)}"
        end = "\n" if done >= size or not self._tty else ""
        self._stream.write(("\r" if self._tty else "") + line + end)
        self._stream.flush()


def _keep_tail(stream: IO[bytes], tail: deque[str]) -> None:
    for line in stream:
        tail.append(line.decode("utf-8", "replace").rstrip())


def _read_outcome(stdout: IO[bytes], bar: ProgressBar) -> DownloadOutcome | None:
    splitter = LineSplitter()
    while chunk := os.read(stdout.fileno(), 65536):
        for line in splitter.feed(chunk):
            message = parse_line(line)
            if not isinstance(message, StateMessage) or message.state != DOWNLOADING_STATE:
                continue
            try:
                payload = decode_download_payload(message.payload)
            except msgspec.ValidationError:
                continue
            if isinstance(payload, DownloadOutcome):
                return payload
            bar(payload)
    return None


def _pull(args: argparse.Namespace) -> int:
    cache_dir = locate_cache_dir(os.environ)
    env = child_environment()  # without secrets, with the lifeline's pid: it dies with us
    token = args.hf_token or os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if token:
        env["HF_TOKEN"] = token
    child = subprocess.Popen(
        [sys.executable, "-m", "downloads", args.model, "--cache-dir", str(cache_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # Ctrl-C reaches only us; we cancel the child by the protocol
    )
    stdin, stdout, stderr = child.stdin, child.stdout, child.stderr
    if stdin is None or stdout is None or stderr is None:
        raise RuntimeError("the download child has no pipes")
    log_tail: deque[str] = deque(maxlen=20)
    threading.Thread(target=_keep_tail, args=(stderr, log_tail), daemon=True).start()
    try:
        outcome = _read_outcome(stdout, ProgressBar(sys.stderr))
    except KeyboardInterrupt:
        stdin.write(EXIT_COMMAND + b"\n")
        stdin.close()
        child.wait()
        print("\ncorral pull: interrupted; the same command resumes it", file=sys.stderr)
        return 130
    stdin.close()
    child.wait()
    if outcome is None:
        print("\n".join(log_tail), file=sys.stderr)
        print(f"corral pull: the download stopped (exit code {child.returncode})", file=sys.stderr)
        return 1
    if not outcome.succeeded:
        print(f"corral pull: {outcome.error}", file=sys.stderr)
        return 1
    name = outcome.model or args.model
    found = resolve_cached_model(scan_cache(cache_dir), name)
    print(f"{name}: {found.path if found is not None else cache_dir}")
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
    parser = SuggestingParser(prog="corral")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str) -> argparse.ArgumentParser:
        summary = COMMAND_SUMMARIES[name]
        return commands.add_parser(
            name, help=summary, description=summary[0].upper() + summary[1:] + "."
        )

    pull = command("pull")
    pull.add_argument("model", help="org/repo[:TAG]; without a tag Q4_K_M, else Q8_0, else first")
    pull.add_argument("-hft", "--hf-token", default=None, help="hub token [HF_TOKEN]")
    command("ls")
    rm = command("rm")
    rm.add_argument("model", help="org/repo:TAG")
    ps = command("ps")
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
    # Parsed by the command's own parser, so a mistyped flag is matched against its flags.
    subparsers = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    args = subparsers.choices[command].parse_args(argv)
    return _HANDLERS[command](args)
