"""Ollama's ``/api/pull``, ``/api/delete`` and ``/api/copy`` over Corral's downloads, hub cache
and names.

A pull is the download child ``POST /models`` starts (router/download_jobs.py), its
progress told as Ollama's NDJSON lines; a delete removes a hub-cache model as
``DELETE /models`` does (or forgets a copy); a copy is one more name for a model, kept while the
router runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec

from corral.http.errors import ApiError
from router.api.downloads import remove_cache_model
from router.api.ollama.lookup import find_model, required
from router.api.ollama.names import hub_reference, resolve
from router.api.runtime import RouterRuntime
from router.download_jobs import DownloadJob

__all__ = ["copy_model", "delete_model", "pull_lines", "pull_whole", "start_pull"]

_encode = msgspec.json.Encoder().encode
# How often a pull looks at its download when no event came (progress and the end come as events).
_POLL_SECONDS = 1.0
_FINISHING = ("verifying sha256 digest", "writing manifest", "success")


def _line(value: dict[str, Any]) -> bytes:
    return _encode(value) + b"\n"


def start_pull(rt: RouterRuntime, name: str) -> DownloadJob | None:
    """Start (or join) the download of ``hf.co/org/repo:TAG`` (or ``org/repo:TAG``); None when
    the model is here already. Refusals (a name that is no hub reference) are 400s, before any
    line is sent."""
    name = required(name, "model")
    if resolve(rt.pool.catalogue, rt.ollama_copies, name) is not None:
        return None
    reference = hub_reference(name)
    job = rt.downloads.find(reference)
    if job is not None and job.downloading:  # a second pull shares the first's progress
        return job
    return rt.downloads.start(reference)


async def pull_lines(rt: RouterRuntime, job: DownloadJob | None) -> AsyncIterator[bytes]:
    """The pull's progress: one line per file as its bytes come, then Ollama's last lines, or
    ``{"error": …}`` if the download fails."""
    yield _line({"status": "pulling manifest"})
    if job is not None:
        events = rt.pool.events.subscribe()
        shown: dict[str, tuple[int, int]] = {}
        try:
            while job.downloading:
                for line in _progress(job, shown):
                    yield line
                await events.next_batch(_POLL_SECONDS)
            await job.exited.wait()  # the catalogue is reloaded by then: the model answers
        finally:
            rt.pool.events.unsubscribe(events)
        for line in _progress(job, shown):  # what came after the last look
            yield line
        if job.error is not None:
            yield _line({"error": job.error})
            return
    for status in _FINISHING:
        yield _line({"status": status})


def _progress(job: DownloadJob, shown: dict[str, tuple[int, int]]) -> list[bytes]:
    """A line for each file whose progress changed since ``shown`` (which is brought up to date)."""
    lines = []
    for url, progress in list(job.progress.items()):
        done, total = progress["done"], progress["total"]
        if shown.get(url) != (done, total):
            shown[url] = (done, total)
            digest = url.rsplit("/", 1)[-1]
            line = {"status": f"pulling {digest}", "digest": digest, "total": total}
            lines.append(_line({**line, "completed": done}))
    return lines


async def pull_whole(rt: RouterRuntime, job: DownloadJob | None) -> dict[str, str]:
    """``stream: false``: the pull's outcome once it has ended."""
    async for line in pull_lines(rt, job):
        value = msgspec.json.decode(line)
        if "error" in value:
            raise ApiError(400, str(value["error"]))
    return {"status": "success"}


async def delete_model(rt: RouterRuntime, name: str) -> None:
    """Forget a copy; or remove a hub-cache model's files (the same as ``DELETE /models``)."""
    name = required(name, "model")
    if rt.ollama_copies.remove(name):
        return
    entry = find_model(rt, name)
    await remove_cache_model(rt, entry.name)
    rt.ollama_copies.prune(rt.pool.catalogue)


def copy_model(rt: RouterRuntime, source: str, destination: str) -> None:
    entry = find_model(rt, source)
    destination = required(destination, "destination")
    # A copy may be copied over, as Ollama overwrites; a model of the catalogue may not.
    taken = resolve(rt.pool.catalogue, rt.ollama_copies, destination) is not None
    if taken and rt.ollama_copies.target(destination) is None:
        raise ApiError(400, f"destination '{destination}' is the name of a model already")
    rt.ollama_copies.add(destination, entry.name)
