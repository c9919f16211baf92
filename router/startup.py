"""What the router fetches and checks before it serves: the ``-hf`` models missing from the hub
cache, downloaded first; every model source reads, and what is to load at startup fits
(docs/serving.md). A bad catalogue, a startup set beyond ``--models-max`` or
``--models-memory-max``, an ``--hf-repo`` not in the cache: each is a ``CatalogueError`` that
stops ``corral serve`` with its reason before a port is bound or a child started.

A startup model the GPUs cannot take (pinned to a GPU there is not, or no room beside the startup
models before it) is not loaded at startup, with a warning naming the device; it loads at its
first request, where the usual rules make room or say why not. It does not stop the router: free
memory is a moment's reading, llama-server's router mode starts regardless, and a router that
refused to start would be restarted into the same refusal by its service manager."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import structlog

from corral.hub.cache_scan import resolve_cached_model, scan_cache
from corral.hub.remote_preset import cached_preset
from router.capacity.devices import DeviceInventory, device_inventory
from router.capacity.footprints import Footprints, default_footprints_path
from router.capacity.memory_budget import MemoryBudget
from router.catalogue.catalogue import Catalogue, CatalogueEntry, CatalogueError, build_catalogue
from router.catalogue.presets import PresetError
from router.cli.hub_download import DownloadFailed, download_model
from router.relay.peer_config import PeerConfig, load_peer_configs
from router.scheduling.placement.device_planner import DevicePlanner
from router.settings import ServeSettings
from router.single_model import single_model_catalogue
from router.workers.model_state import ModelState

__all__ = ["StartupPlan", "fetch_missing", "load_catalogue", "load_peers", "plan_startup"]

_log = structlog.get_logger("corral.router")


@dataclass(frozen=True, slots=True)
class StartupPlan:
    """What the services start from: the sources as read, and the models to load at once."""

    catalogue: Catalogue
    peers: tuple[PeerConfig, ...]
    startup: tuple[CatalogueEntry, ...]
    budget: MemoryBudget | None  # --models-memory-max, if set
    devices: DeviceInventory  # the GPUs, through NVML (or CORRAL_FAKE_DEVICES, a test seam)
    footprints: Footprints  # what models were measured to take on them, by earlier routers


def _fetch(reference: str, cache_dir: Path, token: str | None) -> None:
    _log.info("downloading a --hf-repo model before serving", model=reference)
    try:
        name = download_model(reference, cache_dir, token=token, progress=sys.stderr)
    except DownloadFailed as exc:
        _log.error("cannot download a --hf-repo model", model=reference, error=str(exc))
        raise SystemExit(1) from None
    _log.info("downloaded", model=name)


def fetch_missing(settings: ServeSettings) -> ServeSettings:
    """``-hf ORG/REPO[:TAG]`` of a model not in the cache, and its ``-hfd`` draft: download them
    first, as llama-server does, through the same download child as ``corral pull`` (progress
    on stderr).

    A repository with a root ``preset.ini`` is a remote preset (:mod:`corral.hub.remote_preset`):
    the settings that come back serve it as ``--models-preset``
    (:meth:`ServeSettings.served_as_preset`), whether just downloaded or cached (``--offline``
    too).
    """
    cache_dir = settings.cache_dir
    if cache_dir is None:
        return settings  # create_app then says the model is missing
    # --offline: only implicit fetches are off, and these are (create_app says so).
    draft = settings.model_options.get("spec-draft-hf")
    if (
        draft
        and not settings.offline
        and resolve_cached_model(scan_cache(cache_dir), draft) is None
    ):
        _fetch(draft, cache_dir, settings.hub_token)
    for reference in settings.hf_repos:
        repo = reference.partition(":")[0]
        cached = resolve_cached_model(scan_cache(cache_dir), reference)
        preset = cached_preset(cache_dir, repo)
        if cached is None and preset is None and not settings.offline:
            _fetch(reference, cache_dir, settings.hub_token)
            preset = cached_preset(cache_dir, repo)
        if preset is not None:
            _log.warning("using preset.ini from a hub repository", repo=repo, preset=str(preset))
            settings = settings.served_as_preset(reference, preset, repo)
    return settings


def load_catalogue(settings: ServeSettings) -> Catalogue:
    """Read every model source the settings name; raises ``CatalogueError``."""
    return single_model_catalogue(build_catalogue(settings.sources), settings)


def load_peers(settings: ServeSettings) -> tuple[PeerConfig, ...]:
    """The preset's ``[peer NAME]`` sections; raises ``CatalogueError`` as a bad model would."""
    sources = settings.sources
    try:
        return load_peer_configs(sources.preset_file, remote=sources.preset_repo)
    except PresetError as error:
        raise CatalogueError(str(error)) from None


def plan_startup(settings: ServeSettings) -> StartupPlan:
    """Read the sources and check the startup set; raises ``CatalogueError``."""
    catalogue = load_catalogue(settings)
    peers = load_peers(settings)
    startup = [e for e in catalogue.entries.values() if e.load_on_startup]
    startup += [_cached_entry(catalogue, settings, reference) for reference in settings.hf_repos]
    most = settings.scheduler_limits.most_resident
    if 0 < most < len(startup):
        raise CatalogueError(
            f"{len(startup)} models are to load on startup but --models-max is {most}"
        )
    memory = settings.models_memory_max
    budget = MemoryBudget(memory) if memory > 0 else None
    if budget is not None and len(startup) > 1:  # one model alone may exceed the budget
        needed = sum(budget.expected(ModelState.unloaded(entry)) for entry in startup)
        if needed > budget.limit:
            raise CatalogueError(
                f"{len(startup)} models are to load on startup, expected to hold "
                f"{needed >> 20} MiB, but --models-memory-max is {budget.limit >> 20} MiB"
            )
    try:
        devices = device_inventory()
    except ValueError as error:
        raise CatalogueError(str(error)) from None
    footprints = Footprints(default_footprints_path())
    planner = DevicePlanner(devices, most_resident=most, footprints=footprints)
    misfits = planner.startup_misfits(startup)
    for name, reason in misfits.items():
        _log.warning(
            "not loaded at startup: the GPUs cannot take it; it loads at its first request",
            model=name,
            reason=reason,
        )
    startup = [entry for entry in startup if entry.name not in misfits]
    if not catalogue.entries and not peers:  # else every request is a 404, and nothing says why
        _log.warning(
            "no models: pass --models-dir, -m or -hf, or download one (corral pull, POST /models)",
            **settings.sources.log_fields(),
        )
    return StartupPlan(catalogue, peers, tuple(startup), budget, devices, footprints)


def _cached_entry(catalogue: Catalogue, settings: ServeSettings, reference: str) -> CatalogueEntry:
    """``--hf-repo org/repo[:TAG]``: in the hub cache (``serve`` downloaded it if it could)."""
    cached = None
    if settings.cache_dir is not None:
        cached = resolve_cached_model(scan_cache(settings.cache_dir), reference)
    # By alias: in single-model mode an --alias renames the model (router.single_model).
    entry = catalogue.resolve(cached.name) if cached is not None else None
    if entry is None:
        why = "--offline forbids downloading it" if settings.offline else "it was not downloaded"
        raise CatalogueError(
            f"--hf-repo {reference}: not in the hub cache ({settings.cache_dir}); {why} "
            f"(corral pull {reference} fetches it)"
        )
    return entry
