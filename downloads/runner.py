"""One whole download: plan, room on disk, every file, then the snapshot and ``refs/main``.

Shared by the router's download child and ``corral pull``; progress goes to a callback, at most
about ten reports a second per file (the first and the last always).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from huggingface_hub import constants

# Re-exported by huggingface_hub.utils without "as", which mypy --strict does not count.
from huggingface_hub.utils._headers import build_hf_headers

from corral.hub.cache_layout import RepoLayout, UnsafeName
from corral.hub.names import InvalidReference
from corral.hub.sizes import human_size
from downloads.plan import DownloadError, DownloadPlan, PlannedFile, resolve_plan
from downloads.transfer import fetch_blob

__all__ = [
    "DOWNLOAD_ERRORS",
    "PROGRESS_INTERVAL",
    "DownloadResult",
    "ProgressCallback",
    "run_download",
]

PROGRESS_INTERVAL = 0.1  # seconds between two reports for one file
# Slow is fine, silent is not: a read that waits this long fails (and the next try resumes).
_TIMEOUT = httpx.Timeout(30.0, read=120.0)

# What a download can fail with that is the user's to read, not a bug: an unknown repository or
# tag, a corrupt transfer, a full disk, a malformed reference.
DOWNLOAD_ERRORS = (DownloadError, InvalidReference, UnsafeName, OSError)

ProgressCallback = Callable[[DownloadPlan, PlannedFile, int], None]


@dataclass(frozen=True, slots=True)
class DownloadResult:
    plan: DownloadPlan
    paths: list[Path]  # the snapshot files, first shard first
    transferred: int  # bytes received in this run


class _Throttle:
    def __init__(self, report: Callable[[int], None], total: int) -> None:
        self._report = report
        self._total = total
        self._last = float("-inf")
        self._reported_bytes = False

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        # The first report with bytes on disk is never held back: it says the transfer is under
        # way, and a transfer that then stalls would otherwise never say so.
        first_bytes = done > 0 and not self._reported_bytes
        if done >= self._total or first_bytes or now - self._last >= PROGRESS_INTERVAL:
            self._last = now
            self._reported_bytes = self._reported_bytes or done > 0
            self._report(done)


def _same_origin(a: str, b: str) -> bool:
    first, second = urlsplit(a), urlsplit(b)
    return (first.scheme, first.netloc) == (second.scheme, second.netloc)


def _check_free_space(layout: RepoLayout, plan: DownloadPlan) -> None:
    needed = 0
    for file in plan.files:
        if layout.blob(file.etag).is_file():
            continue
        partial = layout.partial(file.etag)
        have = partial.stat().st_size if partial.is_file() else 0
        needed += max(file.size - have, 0)
    free = shutil.disk_usage(layout.cache_dir).free
    if needed > free:
        raise DownloadError(
            f"not enough free disk space in {layout.cache_dir}: {plan.name} needs "
            f"{human_size(needed)}, only {human_size(free)} free"
        )


def run_download(
    reference: str,
    cache_dir: Path,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    on_plan: Callable[[DownloadPlan], None] | None = None,
    on_progress: ProgressCallback | None = None,
) -> DownloadResult:
    """Fetch ``org/repo[:TAG]`` into the hub cache; raises :class:`DownloadError`.

    ``token`` None means huggingface_hub's own (``HF_TOKEN``, then ``hf auth login``'s);
    ``endpoint`` None means ``HF_ENDPOINT`` or the public hub.
    """
    plan = resolve_plan(reference, token=token, endpoint=endpoint)
    if on_plan is not None:
        on_plan(plan)
    layout = RepoLayout(cache_dir, plan.repo)
    layout.cache_dir.mkdir(parents=True, exist_ok=True)
    _check_free_space(layout, plan)
    hub = endpoint or constants.ENDPOINT
    hub_headers = build_hf_headers(token=token)
    # The token is for the hub only; a CDN's signed URL needs none and must never see it.
    plain_headers = {k: v for k, v in hub_headers.items() if k.lower() != "authorization"}
    transferred = 0
    paths: list[Path] = []
    with httpx.Client(timeout=_TIMEOUT, follow_redirects=True) as client:
        for file in plan.files:

            def report(done: int, file: PlannedFile = file) -> None:
                if on_progress is not None:
                    on_progress(plan, file, done)

            headers = hub_headers if _same_origin(file.location, hub) else plain_headers
            transferred += fetch_blob(
                client, layout, file, headers=headers, on_progress=_Throttle(report, file.size)
            )
    old_commit = layout.current_commit()
    # The first shard is what makes the model visible to a cache scan, so it is linked last:
    # a router reloading meanwhile never sees the model without its other shards or projector.
    for file in reversed(plan.files):
        paths.insert(0, layout.link(plan.commit, file.path, file.etag))
    if old_commit is not None:
        layout.carry_over(old_commit, plan.commit, plan.blobs)
    layout.write_ref(plan.commit)
    return DownloadResult(plan=plan, paths=paths, transferred=transferred)
