"""``python -m downloads org/repo[:TAG] --cache-dir DIR``: one download, as a router's child.

It speaks the workers' stdout protocol (docs/protocol.md §1): ``downloading`` states with per-file
progress, then one outcome, then it exits. The exit command cancels: the outcome ``download_failed``
is sent and the process ends at once. Nothing needs cleaning up, because the partial file on disk is
always a prefix of the real one and the next download of the same file resumes from it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from pathlib import Path

import msgspec
import structlog

from corral.children import lifeline
from corral.children.download_payloads import DOWNLOADING_STATE, DownloadOutcome, DownloadProgress
from corral.children.protocol import EXIT_FAILED, EXIT_STOPPED, StateWriter
from corral.logs import configure_logging
from downloads.plan import DownloadPlan, PlannedFile
from downloads.runner import DOWNLOAD_ERRORS, run_download

__all__ = ["CANCELLED_MESSAGE", "main"]

_log = structlog.get_logger("corral.download")
CANCELLED_MESSAGE = "download cancelled; the bytes fetched so far are kept for a later resume"


class _Reporter:
    """Sends progress, and exactly one outcome whichever thread gets there first."""

    def __init__(self, states: StateWriter) -> None:
        self._states = states
        self._lock = threading.Lock()
        self._done = False
        self.model = ""

    def _send(self, message: msgspec.Struct) -> None:
        self._states.send(DOWNLOADING_STATE, msgspec.to_builtins(message))

    def planned(self, plan: DownloadPlan) -> None:
        self.model = plan.name
        _log.info("downloading", model=plan.name, files=[file.path for file in plan.files])

    def progress(self, plan: DownloadPlan, file: PlannedFile, done: int) -> None:
        with self._lock:
            if not self._done:
                self._send(DownloadProgress(file.url, done, file.size, plan.name, file.path))

    def outcome(self, error: str | None) -> bool:
        """Send the outcome unless one was sent already; returns whether this call sent it."""
        with self._lock:
            if self._done:
                return False
            self._done = True
            outcome = (
                DownloadOutcome("download_failed", error, self.model or None)
                if error is not None
                else DownloadOutcome("download_finished", None, self.model or None)
            )
            self._send(outcome)
            return True


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m downloads")
    parser.add_argument("model", help="org/repo[:TAG]")
    parser.add_argument("--cache-dir", type=Path, required=True, help="the hub cache")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    reporter = _Reporter(StateWriter.claim_stdout())
    configure_logging()
    for chatty in ("httpx2", "httpcore2"):  # a line per request to the hub
        logging.getLogger(chatty).setLevel("WARNING")

    def cancel() -> None:  # the exit command, on the lifeline thread
        if reporter.outcome(CANCELLED_MESSAGE):
            _log.info("download cancelled", model=reporter.model or args.model)
        os._exit(EXIT_STOPPED)

    lifeline.arm(on_exit_command=cancel)
    try:
        # The token comes from the environment (HF_TOKEN), which the router fills for
        # download children only.
        result = run_download(
            args.model, args.cache_dir, on_plan=reporter.planned, on_progress=reporter.progress
        )
    except DOWNLOAD_ERRORS as exc:
        _log.error("download failed", model=args.model, error=str(exc))
        reporter.outcome(str(exc))
        sys.exit(EXIT_FAILED)
    except Exception as exc:
        _log.exception("download failed", model=args.model)
        reporter.outcome(f"internal error: {exc}")
        sys.exit(EXIT_FAILED)
    _log.info(
        "download finished", model=result.plan.name, bytes=result.transferred, path=result.paths[0]
    )
    reporter.outcome(None)
