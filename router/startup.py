"""What the router checks before it serves: every model source reads, and what is to load at
startup fits (docs/serving.md). A bad catalogue, a startup set beyond ``--models-max`` or
``--models-memory-max``, an ``--hf-repo`` not in the cache: each is a ``CatalogueError`` that
stops ``corral serve`` with its reason before a port is bound or a child started.

A startup model the GPUs cannot take (pinned to a GPU there is not, or no room beside the startup
models before it) is not loaded at startup, with a warning naming the device; it loads at its
first request, where the usual rules make room or say why not. It does not stop the router: free
memory is a moment's reading, llama-server's router mode starts regardless, and a router that
refused to start would be restarted into the same refusal by its service manager."""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from corral.hub.cache_scan import resolve_cached_model, scan_cache
from router.capacity.devices import DeviceInventory, device_inventory
from router.capacity.footprints import Footprints, default_footprints_path
from router.capacity.memory_budget import MemoryBudget
from router.catalogue.catalogue import Catalogue, CatalogueEntry, CatalogueError, build_catalogue
from router.catalogue.presets import PresetError
from router.relay.peer_config import PeerConfig, load_peer_configs
from router.scheduling.device_planner import DevicePlanner
from router.settings import ServeSettings
from router.single_model import single_model_catalogue
from router.workers.model_state import ModelState

__all__ = ["StartupPlan", "load_catalogue", "load_peers", "plan_startup"]

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


def load_catalogue(settings: ServeSettings) -> Catalogue:
    """Read every model source the settings name; raises ``CatalogueError``."""
    catalogue = build_catalogue(
        models_dir=settings.models_dir,
        model_files=settings.model_files,
        mmproj_file=settings.mmproj_file,
        preset_file=settings.models_preset,
        preset_repo=settings.models_preset_repo,
        cache_dir=settings.cache_dir,
        cli_options=settings.model_options,
    )
    return single_model_catalogue(catalogue, settings)


def load_peers(settings: ServeSettings) -> tuple[PeerConfig, ...]:
    """The preset's ``[peer NAME]`` sections; raises ``CatalogueError`` as a bad model would."""
    try:
        return load_peer_configs(settings.models_preset, remote=settings.models_preset_repo)
    except PresetError as error:
        raise CatalogueError(str(error)) from None


def plan_startup(settings: ServeSettings) -> StartupPlan:
    """Read the sources and check the startup set; raises ``CatalogueError``."""
    catalogue = load_catalogue(settings)
    peers = load_peers(settings)
    startup = [e for e in catalogue.entries.values() if e.load_on_startup]
    startup += [_cached_entry(catalogue, settings, reference) for reference in settings.hf_repos]
    if 0 < settings.models_max < len(startup):
        raise CatalogueError(
            f"{len(startup)} models are to load on startup but --models-max is "
            f"{settings.models_max}"
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
    planner = DevicePlanner(devices, models_max=settings.models_max, footprints=footprints)
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
            models_dir=None if settings.models_dir is None else str(settings.models_dir),
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
