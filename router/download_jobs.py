"""Downloads the router runs: one ``python -m downloads`` child each (docs/protocol.md §1, §3).

A download is not a model: it never takes or evicts a ``--models-max`` slot, and any number run
at once. Its entry is listed by ``GET /models`` from ``POST /models`` on: ``downloading``, then
``downloaded``. A finished download triggers a catalogue reload, which replaces the entry with
the cache model, and only then ``download_finished`` is sent, so a client that reacts to it
finds the model listed; a failed one stays listed with its error until the next reload; a
cancelled one goes at once. Only download children get the hub token (``--hf-token`` or
``HF_TOKEN``).
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import structlog
from anyio.abc import TaskGroup

from corral.children.download_payloads import (
    DOWNLOADING_STATE,
    DownloadOutcome,
    DownloadProgress,
    decode_download_payload,
)
from corral.children.environment import child_environment
from corral.children.protocol import StateMessage
from corral.http.errors import ApiError
from corral.hub.names import InvalidReference, parse_reference
from corral.hub.removal import sweep_stale_partials
from router.catalogue.listing import ListingStatus, ModelListing
from router.workers.child_supervisor import ChildExit, ChildSupervisor
from router.workers.launcher import SubprocessLauncher
from router.workers.pool import WorkerPool

if TYPE_CHECKING:  # the settings name the layers above (keys, tools): a type, never an import
    from router.settings import ServeSettings

__all__ = ["DownloadJob", "DownloadJobs", "DownloadStatus", "download_key"]

_log = structlog.get_logger("corral.downloads")
# The child ends at once on the exit command; this only bounds a child that is wedged (SIGTERM
# after this long, SIGKILL after as long again).
_CANCEL_GRACE_SECONDS = 5.0


class DownloadStatus(enum.StrEnum):
    DOWNLOADING = "downloading"
    DOWNLOADED = "downloaded"


def download_key(name: str) -> str:
    """``org/repo:q8_0`` → ``org/repo:Q8_0``; raises ``InvalidReference`` when malformed."""
    repo, tag = parse_reference(name)
    return f"{repo}:{tag}" if tag else repo


@dataclass
class DownloadJob:
    name: str  # as requested, tag case normalised: "org/repo" or "org/repo:TAG"
    args: list[str]
    status: DownloadStatus = DownloadStatus.DOWNLOADING
    model: str | None = None  # the cache name the child resolved, "org/repo:TAG"
    progress: dict[str, dict[str, int]] = field(default_factory=dict)
    outcome: DownloadOutcome | None = None
    supervisor: ChildSupervisor | None = None  # until its child has exited
    cancelling: bool = False
    exited: anyio.Event = field(default_factory=anyio.Event)

    @property
    def downloading(self) -> bool:
        return self.status is DownloadStatus.DOWNLOADING

    @property
    def error(self) -> str | None:
        return self.outcome.error if self.outcome is not None else None

    def list_entry(self, created: int) -> ModelListing:
        """The ``GET /models`` entry, shaped like a model's."""
        status = ListingStatus(value=self.status.value, args=self.args)
        if self.progress:
            status.progress = self.progress
        if self.error is not None:
            status.failed, status.error = True, self.error
        return ModelListing(
            id=self.name,
            owned_by="llamacpp",
            created=created,
            status=status,
            source="cache",
            can_remove=True,
            pinned=False,
            ttl=None,
            tools=None,
        )


class DownloadJobs:
    def __init__(
        self,
        pool: WorkerPool,
        *,
        settings: ServeSettings,
        task_group: TaskGroup,
        reload: Callable[[], Awaitable[None]],
    ) -> None:
        self._pool = pool  # for the catalogue, and to tell model events' listeners
        self._settings = settings
        self._tasks = task_group
        self._reload = reload
        # Always real processes: a test's fake worker launcher knows nothing of downloads.
        self._launcher = SubprocessLauncher()
        self._reload_lock = anyio.Lock()
        self.jobs: dict[str, DownloadJob] = {}

    def find(self, name: str) -> DownloadJob | None:
        """The download asked for under this name, or fetching the model of this name."""
        try:
            key = download_key(name)
        except InvalidReference:
            return None
        return self.jobs.get(key) or next(
            (job for job in self.jobs.values() if job.model == key), None
        )

    def start(self, name: str) -> DownloadJob:
        """Spawn the download child; returns at once. Refusals are 400s."""
        if self._settings.cache_dir is None:
            raise ApiError(400, "downloads are disabled: no hub cache directory")
        try:
            key = download_key(name)
        except InvalidReference as exc:
            raise ApiError(400, str(exc)) from None
        if self._pool.catalogue.resolve(key) is not None:
            raise ApiError(400, f"model '{key}' already exists")
        running = self.find(key)
        if running is not None and running.downloading:
            raise ApiError(400, f"model '{key}' is already being downloaded")
        cache_dir = str(self._settings.cache_dir)
        args = [sys.executable, "-m", "downloads", key, "--cache-dir", cache_dir]
        job = self.jobs[key] = DownloadJob(key, args)
        job.supervisor = ChildSupervisor(
            self._launcher,
            args,
            self._child_env(),
            name=key,
            source="download",
            on_state=lambda message: self._on_state(job, message),
            stop_timeout=_CANCEL_GRACE_SECONDS,
        )
        self._publish(job, "model_status", {"status": job.status.value})
        self._publish(job, "status_change", {"status": job.status.value})
        self._tasks.start_soon(self._run, job)
        return job

    async def cancel(self, job: DownloadJob) -> None:
        """Stop a running download and wait for its child to end; its partial files stay."""
        if not job.downloading:
            return
        job.cancelling = True
        supervisor = job.supervisor
        if supervisor is not None:
            await supervisor.stop()
        await job.exited.wait()

    def forget(self, job: DownloadJob) -> None:
        if self.jobs.get(job.name) is job:
            del self.jobs[job.name]
            self._pool.changed.notify()

    def forget_finished(self) -> None:
        """A catalogue reload drops every ended download, as upstream erases them."""
        for job in list(self.jobs.values()):
            if not job.downloading:
                self.forget(job)

    async def cancel_all(self) -> None:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for job in list(self.jobs.values()):
                    group.start_soon(self.cancel, job)

    async def sweep_stale_partials(self) -> None:
        """At startup: delete partial files nobody has touched for a day (see cache_files)."""
        cache_dir = self._settings.cache_dir
        if cache_dir is None or any(job.downloading for job in self.jobs.values()):
            return
        swept = await anyio.to_thread.run_sync(sweep_stale_partials, cache_dir)
        if swept:
            _log.info("removed stale partial downloads", files=[str(path) for path in swept])

    def _publish(self, job: DownloadJob, event: str, data: dict[str, Any] | None = None) -> None:
        self._pool.events.publish(job.name, event, data)
        self._pool.changed.notify()

    def _child_env(self) -> dict[str, str]:
        env = child_environment()
        token = self._settings.hub_token
        if token:
            env["HF_TOKEN"] = token
        return env

    async def _run(self, job: DownloadJob) -> None:
        # In the router's task group: whatever goes wrong must end as this download's failure.
        supervisor = job.supervisor
        try:
            if supervisor is None:
                raise RuntimeError("download started without a supervisor")
            _log.info("starting download", model=job.name)
            await self._after_exit(job, await supervisor.run())
        except Exception as exc:
            _log.exception("download supervision failed", model=job.name)
            if job.outcome is None:
                self._settle(job, DownloadOutcome("download_failed", f"internal error: {exc}"))
        finally:
            job.supervisor = None
            job.exited.set()

    async def _after_exit(self, job: DownloadJob, ended: ChildExit) -> None:
        if ended.internal_error is not None:
            if job.outcome is None:
                error = f"internal error: {ended.internal_error}"
                self._settle(job, DownloadOutcome("download_failed", error))
            return
        if ended.launch_error is not None:
            self._settle(job, DownloadOutcome("download_failed", ended.reason))
            return
        if job.outcome is None:
            reason = (
                "download cancelled"
                if job.cancelling
                else f"the download process ended with code {ended.returncode}"
                + (f": {ended.last_words}" if ended.last_words else "")
            )
            self._settle(job, DownloadOutcome("download_failed", reason))
        if job.outcome is not None and job.outcome.succeeded:  # even if a cancel came too late
            async with self._reload_lock:  # two reloads at once could land out of order
                try:
                    await self._reload()
                except Exception as exc:
                    _log.error("reload after a download failed", model=job.name, error=str(exc))
            # Only now: a client told "finished" finds the model in GET /models.
            self._publish(job, "download_finished", {"id": job.model} if job.model else None)
        elif job.cancelling:
            self.forget(job)

    def _on_state(self, job: DownloadJob, line: StateMessage) -> None:
        if line.state != DOWNLOADING_STATE:
            _log.warning("unexpected state from a download", model=job.name, state=line.state)
            return
        try:
            message = decode_download_payload(line.payload)
        except msgspec.ValidationError as exc:
            _log.warning("malformed download state", model=job.name, reason=str(exc))
            return
        if isinstance(message, DownloadProgress):
            self._on_progress(job, message)
        elif job.outcome is None:
            self._settle(job, message)

    def _on_progress(self, job: DownloadJob, progress: DownloadProgress) -> None:
        job.model = progress.model or job.model
        job.progress[progress.url] = {"done": progress.downloaded, "total": progress.total}
        self._publish(job, "download_progress", {"progress": dict(job.progress)})

    def _settle(self, job: DownloadJob, outcome: DownloadOutcome) -> None:
        job.outcome, job.status = outcome, DownloadStatus.DOWNLOADED
        job.model = outcome.model or job.model
        if outcome.succeeded:
            _log.info("download finished", model=job.name, cache_name=job.model)
            self._publish(job, "status_change", {"status": job.status.value})
        else:
            log = _log.info if job.cancelling else _log.error
            log("download failed", model=job.name, error=outcome.error)
            status = {"status": job.status.value, "error": outcome.error}
            self._publish(job, "status_change", status)
            self._publish(job, "download_failed", {"error": outcome.error})
