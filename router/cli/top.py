"""``corral top``: the activity view in a terminal, as people watch ``htop`` (issue 39).

It reads the router's ``GET /activity`` every ``--interval`` seconds and redraws one screen with
plain ANSI (the alternate screen, cleared and written from the top), so it works over SSH and in
any terminal: the models with their tokens/s and memory, each device's memory, the requests in
flight and the last finished, and the last model events. ``q`` or Ctrl-C ends it; ``--once``
prints one screen and exits (for scripts). Into a pipe or a file (``corral top --once | head``)
it writes plain text: no colour or cursor codes for the reader to strip.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import select
import shutil
import sys
import termios
import time
import tty
from collections.abc import Iterator
from typing import Any

import httpx

from corral.hub.sizes import human_size
from router.cli.router_client import router_key

__all__ = ["add_top_flags", "render", "run_top"]

_ALT_SCREEN, _MAIN_SCREEN = "\x1b[?1049h\x1b[?25l", "\x1b[?25h\x1b[?1049l"
_HOME_CLEAR = "\x1b[H\x1b[2J"
_BOLD, _DIM, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"
_STYLES = re.compile(r"\x1b\[[0-9;]*m")


def add_top_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--interval", type=float, default=2.0, help="seconds between refreshes (default 2)"
    )
    parser.add_argument("--once", action="store_true", help="print one screen and exit")


def _fetch(url: str, key: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = httpx.get(f"{url.rstrip('/')}/activity", headers=headers, timeout=5)
    if response.status_code == 401:
        raise RuntimeError(f"{url} wants an API key: pass it with --api-key KEY or LLAMA_API_KEY")
    response.raise_for_status()
    snapshot: dict[str, Any] = response.json()
    return snapshot


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s" if value < 10 else f"{value:.1f}s"


def _table(rows: list[tuple[str, ...]], width: int) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines[0] = _BOLD + lines[0][:width] + _RESET
    return [lines[0], *(line[:width] for line in lines[1:])]


def _speed(record: dict[str, Any]) -> str:
    speed = record.get("tokens_per_s")
    return f"{speed:.1f}" if speed is not None else "-"


def _first_piece(record: dict[str, Any]) -> str:
    """A stream's time to its first token; a whole answer's time to that answer, said as such
    (its first piece is all of it)."""
    if record.get("stream"):
        first = record.get("first_token")
        return _seconds(first - record["received"] if first else None)
    ended = record.get("ended")
    return f"answer {_seconds(ended - record['received'])}" if ended else "-"


def render(snapshot: dict[str, Any], url: str, width: int = 100, height: int = 40) -> list[str]:
    """One screen's lines for a ``GET /activity`` snapshot."""
    now = snapshot["now"]
    samples = snapshot.get("samples") or []
    speeds = samples[-1]["models"] if samples else {}
    requests = snapshot["requests"]
    live = [r for r in requests if r.get("ended") is None]
    clock = time.strftime("%H:%M:%S", time.localtime(now))
    queued = sum(1 for r in live if r["state"] in ("queued", "loading"))
    lines = [f"{_BOLD}corral top{_RESET}  {url}  {clock}  in flight {len(live)}, waiting {queued}"]
    models: list[tuple[str, ...]] = [("MODEL", "STATUS", "IN FLIGHT", "TOK/S", "RAM", "VRAM")]
    for model in snapshot["models"]:
        speed = (speeds.get(model["name"]) or {}).get("tokens_per_s")
        models.append((
            model["name"],
            model["status"],
            str(model.get("in_flight", 0)),
            f"{speed:.1f}" if speed else "-",
            human_size(model["ram"]) if model.get("ram") is not None else "-",
            human_size(model["vram"]) if model.get("vram") is not None else "-",
        ))  # fmt: skip
    lines += ["", *_table(models, width)]
    devices: list[tuple[str, ...]] = [("DEVICE", "USED", "TOTAL", "")]
    for name, device in snapshot["devices"].items():
        share = device["used"] / device["total"] if device["total"] else 0.0
        bar = "[" + "#" * round(share * 20) + "." * (20 - round(share * 20)) + "]"
        devices.append((name, human_size(device["used"]), human_size(device["total"]), bar))
    if len(devices) > 1:
        lines += ["", *_table(devices, width)]
    rows: list[tuple[str, ...]] = [
        ("ID", "MODEL", "STATE", "KEY", "WAIT", "1ST TOKEN", "TOK/S", "STATUS")
    ]
    room = max(3, height - len(lines) - 10)
    for record in [*live, *(r for r in requests if r.get("ended") is not None)][:room]:
        end = record.get("dispatched") or record.get("ended") or now
        rows.append((
            record["id"],
            record["model"],
            record["state"],
            record.get("key_id") or "-",
            _seconds(end - record["received"]),
            _first_piece(record),
            _speed(record),
            str(record.get("status") or "-"),
        ))  # fmt: skip
    lines += ["", *_table(rows, width)]
    events = snapshot["events"][-max(1, height - len(lines) - 3) :]
    if events:
        lines += ["", f"{_BOLD}EVENTS{_RESET}"]
        for event in reversed(events):
            when = time.strftime("%H:%M:%S", time.localtime(event["at"]))
            detail = f": {event['detail']}" if event.get("detail") else ""
            lines.append(f"{_DIM}{when}{_RESET} {event['model']} {event['kind']}{detail}"[:width])
    return lines[:height]


@contextlib.contextmanager
def _screen() -> Iterator[bool]:
    """The alternate screen and single keys (``q``) on a terminal; plain output elsewhere."""
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        yield False
        return
    saved = termios.tcgetattr(sys.stdin)
    sys.stdout.write(_ALT_SCREEN)
    try:
        tty.setcbreak(sys.stdin)
        yield True
    finally:
        termios.tcsetattr(sys.stdin, termios.TCSADRAIN, saved)
        sys.stdout.write(_MAIN_SCREEN)
        sys.stdout.flush()


def _quit_within(seconds: float, keys: bool) -> bool:
    """Wait ``seconds``; True if ``q`` was pressed meanwhile."""
    if not keys:
        time.sleep(seconds)
        return False
    ready, _, _ = select.select([sys.stdin], [], [], seconds)
    return bool(ready) and sys.stdin.read(1).lower() == "q"


def run_top(args: argparse.Namespace) -> int:
    key = router_key(args.api_key)
    with contextlib.suppress(KeyboardInterrupt), _screen() as keys:
        while True:
            size = shutil.get_terminal_size()
            try:
                lines = render(_fetch(args.url, key), args.url, size.columns, size.lines - 1)
            except (httpx.HTTPError, RuntimeError) as exc:
                if args.once:
                    print(f"corral top: {exc}", file=sys.stderr)
                    return 1
                lines = [f"corral top  {args.url}", "", f"cannot read the router: {exc}"]
            if not sys.stdout.isatty():
                lines = [_STYLES.sub("", line) for line in lines]
            try:
                sys.stdout.write(("" if args.once or not keys else _HOME_CLEAR) + "\n".join(lines))
                sys.stdout.write("\n")
                sys.stdout.flush()
            except BrokenPipeError:  # `| head` read what it wanted: done, without a traceback
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 0
            if args.once or _quit_within(args.interval, keys):
                return 0
    return 0
