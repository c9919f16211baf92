"""Which GPU a model loads on, whether it fits next to the others, and how much of it it may take.

The scheduler asks :meth:`DevicePlanner.fits` before it claims a load (and evicts idle models
until the answer is yes), :meth:`DevicePlanner.victim_devices` which devices need the room, and
:meth:`DevicePlanner.place` for the decision handed to the worker. The rules (docs/operations.md,
GPUs):

- **What a model takes** on the GPUs is what it was measured to take the last time it ran
  with these settings (its worker reports bytes per device once loaded; kept across restarts by
  router/capacity/footprints.py), else an estimate from its files and GGUF header: weights plus
  the KV cache of its context.
- **What a device has room for** is its total, less what others outside Corral use (the
  driver's used memory minus what Corral's loaded models reported), less its margin
  (``--fit-target``, 1024 MiB by default, as llama.cpp), less what the staying models take.
- **Where**: a preset's ``device`` pins a model. Otherwise a model that fits on one GPU goes to
  the one with the most room; it is split over several only when it fits on none alone.
- **Alone**: a model that fits nowhere even with every idle model gone still loads; llama.cpp's
  fit keeps on the GPUs what fits (as llama-server does), and the placement says so.
- **Shares**: when ``ctx-size`` is not set, a model could take a whole
  GPU for its context. So the router leaves room for the models it is configured to keep
  (``--models-max``): each gets an even share of what is free, never less than it needs at
  ``--fit-ctx`` and never so much that the others could not load at theirs. The share reaches the
  worker as a larger ``--fit-target``, and llama.cpp's fit shrinks the context to it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import structlog

from corral.hub.sizes import files_size
from corral.options.model_options import ModelOptions
from router.capacity.devices import Device, DeviceInventory
from router.capacity.footprints import Footprints
from router.capacity.memory_budget import kv_cache_bytes
from router.capacity.placement import Placement
from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.placement.device_snapshot import DeviceSnapshot, Estimate
from router.workers.model_state import ModelState

__all__ = [
    "DEFAULT_FIT_CTX",
    "DEFAULT_FIT_TARGET_MIB",
    "DevicePlanner",
    "DeviceSnapshot",
    "choose_devices",
    "gguf_estimate",
]

_log = structlog.get_logger("corral.placement")
MIB = 1 << 20
# llama.cpp's --fit-target and --fit-ctx defaults (common/arg.cpp), from the option table.
DEFAULT_FIT_TARGET_MIB = int(ModelOptions().items("fit-target")[0])
DEFAULT_FIT_CTX = ModelOptions().integer("fit-ctx")


def gguf_estimate(entry: CatalogueEntry, ctx: int | None) -> int:
    """Weights (its files) plus the KV cache of ``ctx`` tokens, from its GGUF header."""
    return files_size(entry.files()) + kv_cache_bytes(entry, ctx)


def choose_devices(
    need: int, rooms: Mapping[str, int], pinned: Sequence[str] = ()
) -> tuple[str, ...] | None:
    """Where ``need`` bytes go given each device's room (in inventory order); None: nowhere."""
    if pinned:  # the user's choice; several pinned devices share the model as llama.cpp splits
        chosen = tuple(name for name in pinned if name in rooms)
        if not chosen:  # devices the router cannot see (another back-end): not its to judge
            return tuple(pinned)
        fits = chosen and sum(max(rooms[name], 0) for name in chosen) >= need
        return chosen if fits else None
    if not rooms:
        return None
    best = max(rooms, key=lambda name: rooms[name])  # the first of equals: inventory order
    if rooms[best] >= need:
        return (best,)
    spread = tuple(name for name, room in rooms.items() if room > 0)
    return spread if sum(rooms[name] for name in spread) >= need else None


def _spread(need: int, devices: Sequence[str], rooms: Mapping[str, int]) -> dict[str, int]:
    """A split model's bytes per device: in proportion to room, as llama.cpp splits by free."""
    total = sum(max(rooms.get(name, 0), 0) for name in devices)
    if total <= 0:
        return {name: need // len(devices) for name in devices}
    return {name: need * max(rooms.get(name, 0), 0) // total for name in devices}


_BACKEND = re.compile(r"\D+")


def _missing_devices(pinned: Sequence[str], rooms: Mapping[str, int]) -> list[str]:
    """Pinned devices of a back-end the router sees (``CUDA``) that it does not list; others
    (``Vulkan0`` beside NVML's GPUs) are not its to judge."""
    seen = {match[0] for name in rooms if (match := _BACKEND.match(name))}
    return [
        name
        for name in pinned
        if name not in rooms and (match := _BACKEND.match(name)) and match[0] in seen
    ]


def _split(chosen: Sequence[str], rooms: Mapping[str, int]) -> tuple[float, ...]:
    """A split's ``--tensor-split``: each device's part of the room, as llama.cpp's fit splits by
    free memory (and as :func:`_spread` expects it); () for one device."""
    if len(chosen) < 2:
        return ()
    total = sum(max(rooms[name], 0) for name in chosen)
    return tuple(round(max(rooms[name], 0) / total, 3) for name in chosen)


def _option(entry: CatalogueEntry, key: str) -> str | None:
    return dict(entry.options).get(key)


# A split the user chose names GPUs by their index among all of them (--main-gpu 1), so the router
# neither narrows them with --device nor moves the model: it only checks the model fits.
_USER_SPLIT = ("main-gpu", "tensor-split", "split-mode")


def _pinned(entry: CatalogueEntry, devices: Iterable[str]) -> tuple[str, ...]:
    """The devices the user chose for the model (``device``, or all with a split of theirs)."""
    value = _option(entry, "device") or ""
    named = tuple(name.strip() for name in value.split(",") if name.strip())
    if named or not any(_option(entry, key) is not None for key in _USER_SPLIT):
        return named
    return tuple(devices)


def _margins(entry: CatalogueEntry) -> tuple[int, ...]:
    """The MiB a model's fit keeps free per device: its ``fit-target``, else llama.cpp's 1024."""
    return tuple(int(float(item)) for item in entry.model_options.items("fit-target"))


def _margin(margins: Sequence[int], index: int) -> int:
    # One value applies to every device; a list gives each its own (as --fit-target).
    return margins[min(index, len(margins) - 1)] * MIB


def on_gpu(entry: CatalogueEntry) -> bool:
    """Whether the model offloads anything: not ``device = none``, not ``n-gpu-layers = 0``."""
    return _option(entry, "device") != "none" and _option(entry, "n-gpu-layers") != "0"


class DevicePlanner:
    def __init__(
        self,
        inventory: DeviceInventory,
        *,
        most_resident: int = 0,
        estimate: Estimate = gguf_estimate,
        footprints: Footprints | None = None,
    ) -> None:
        self.inventory = inventory
        self._most_resident = most_resident  # the models that run together; 0: no limit
        self._estimate = estimate
        self._footprints = footprints  # measured by an earlier router

    def snapshot(self) -> DeviceSnapshot:
        """What one decision reads of the GPUs, once
        (router/scheduling/placement/device_snapshot.py). Every method takes one; without it, it
        reads its own."""
        return DeviceSnapshot(self.inventory, self._estimate)

    # --- what models take ------------------------------------------------------------------------

    def need(self, state: ModelState, snap: DeviceSnapshot | None = None) -> int:
        """Bytes the model takes on the GPUs once loaded: measured before (by this router, else
        by an earlier one), else estimated."""
        remembered = self._footprints.get(state.entry) if self._footprints is not None else 0
        return state.gpu_peak or remembered or (snap or self.snapshot()).estimate(state.entry, None)

    def admit(self, state: ModelState, snap: DeviceSnapshot | None = None) -> int:
        """Bytes it must find free to load: with its context left to llama.cpp's fit (``ctx-size``
        unset, fit on), what it needs at ``--fit-ctx``; the fit shrinks it to what it is given."""
        snap = snap or self.snapshot()
        options = state.entry.model_options
        if "ctx-size" in options or not options.flag("fit"):
            return self.need(state, snap)
        return min(self.need(state, snap), self.least_need(state.entry, snap))

    def least_need(self, entry: CatalogueEntry, snap: DeviceSnapshot | None = None) -> int:
        """What it takes at ``--fit-ctx`` (its own context if it set one)."""
        snap = snap or self.snapshot()
        if _option(entry, "ctx-size") is not None:
            return snap.estimate(entry, None)
        return snap.estimate(entry, entry.model_options.integer("fit-ctx"))

    def in_use(self, state: ModelState, snap: DeviceSnapshot | None = None) -> dict[str, int]:
        """Bytes per GPU a running model's worker holds now: as the driver counts its process
        (its CUDA context included), else as the worker reported once loaded, nothing while it
        sleeps (its weights and KV cache are freed; the margin covers its CUDA context)."""
        process = state.process
        snap = snap or self.snapshot()
        driver = snap.process_memory(process.pid) if process is not None else None
        if driver:
            return driver
        return state.gpu_held

    def held(self, state: ModelState, snap: DeviceSnapshot | None = None) -> dict[str, int]:
        """Bytes per GPU a running model holds, or will once its load is done."""
        used = self.in_use(state, snap)
        placement = state.placement
        if state.gpu_bytes or placement is None or not placement.devices:
            return used
        # Still loading: what the router expected of it where it put it, or what it holds
        # already if more.
        planned = _spread(placement.needed, placement.devices, {d: 1 for d in placement.devices})
        return {name: max(planned.get(name, 0), used.get(name, 0)) for name in planned | used}

    # --- room -------------------------------------------------------------------------------------

    def rooms(
        self,
        devices: Sequence[Device],
        staying: Iterable[ModelState],
        running: Iterable[ModelState],
        margins: Sequence[int] = (DEFAULT_FIT_TARGET_MIB,),
        snap: DeviceSnapshot | None = None,
    ) -> dict[str, int]:
        """Bytes each device has for a newcomer, ``margins`` (MiB) kept (may be negative)."""
        snap = snap or self.snapshot()
        reported: dict[str, int] = {}
        for state in running:  # the driver's "used" counts them: they are not someone else's
            for name, used in self.in_use(state, snap).items():
                reported[name] = reported.get(name, 0) + used
        rooms = {}
        for index, device in enumerate(devices):
            others = max(device.used - reported.get(device.name, 0), 0)
            rooms[device.name] = device.total - others - _margin(margins, index)
        for state in staying:
            for name, held in self.held(state, snap).items():
                if name in rooms:
                    rooms[name] -= held
        return rooms

    # --- decisions --------------------------------------------------------------------------------

    def fits(
        self,
        staying: Sequence[ModelState],
        coming: Sequence[ModelState],
        running: Iterable[ModelState],
        snap: DeviceSnapshot | None = None,
    ) -> bool:
        """Whether ``coming`` fit on the GPUs next to ``staying`` (alone, anything does)."""
        return not self.victim_devices(staying, coming, running, snap)

    def victim_devices(
        self,
        staying: Sequence[ModelState],
        coming: Sequence[ModelState],
        running: Iterable[ModelState],
        snap: DeviceSnapshot | None = None,
    ) -> set[str]:
        """The devices where idle models must make room for ``coming``; empty: they fit."""
        snap = snap or self.snapshot()
        devices = snap.devices
        if not devices:
            return set()
        gpu_coming = [state for state in coming if on_gpu(state.entry)]
        if not gpu_coming:
            return set()
        rooms = self.rooms(devices, staying, running, _margins(gpu_coming[0].entry), snap)
        occupied = any(self.held(state, snap) for state in staying)
        for state in gpu_coming:
            need, pinned = self.admit(state, snap), _pinned(state.entry, rooms)
            chosen = choose_devices(need, rooms, pinned)
            if chosen is None:
                if occupied:  # the device closest to fitting it, or the ones it is pinned to
                    return set(pinned) or {max(rooms, key=lambda name: rooms[name])}
                chosen = pinned or tuple(rooms)  # alone: it loads with what fits
            for name, used in _spread(need, chosen, rooms).items():
                rooms[name] -= used
            occupied = True
        return set()

    def place(
        self,
        state: ModelState,
        staying: Sequence[ModelState],
        models: Iterable[ModelState],
        snap: DeviceSnapshot | None = None,
    ) -> Placement:
        """Where ``state`` loads now, next to ``staying``; ``models``: every catalogue model."""
        snap = snap or self.snapshot()
        devices = snap.devices
        if not devices or not on_gpu(state.entry):
            return Placement()
        models = list(models)
        running = [other for other in models if other.running]
        margins = _margins(state.entry)
        rooms = self.rooms(devices, staying, running, margins, snap)
        need, pinned = self.admit(state, snap), _pinned(state.entry, rooms)
        chosen = choose_devices(need, rooms, pinned)
        if chosen is None:
            chosen = pinned or tuple(rooms)
            _log.warning(
                "model fits on no GPU: llama.cpp's fit keeps what fits, the rest runs on the CPU",
                model=state.name,
                needed_mib=need >> 20,
                room_mib={name: max(room, 0) >> 20 for name, room in rooms.items()},
            )
            return Placement(chosen, fits=False, needed=need, pinned=bool(pinned))
        split = _split(chosen, rooms) if not pinned else ()
        if _option(state.entry, "ctx-size") is not None:  # the user's context: fit keeps it
            return Placement(chosen, needed=need, pinned=bool(pinned), tensor_split=split)
        targets, share = self._shares(state, chosen, rooms, staying, models, margins, snap)
        needed = min(self.need(state, snap), share)  # the fit shrinks its context to the share
        return Placement(chosen, targets, needed=needed, pinned=bool(pinned), tensor_split=split)

    def _shares(
        self,
        state: ModelState,
        chosen: tuple[str, ...],
        rooms: Mapping[str, int],
        staying: Sequence[ModelState],
        models: Sequence[ModelState],
        margins: Sequence[int],
        snap: DeviceSnapshot,
    ) -> tuple[tuple[int, ...], int]:
        """The ``--fit-target`` (MiB per chosen device) that leaves room for the models to come,
        and the bytes that leaves the model (its share)."""
        gpu_models = [m for m in models if on_gpu(m.entry)]
        most = self._most_resident
        kept = len(gpu_models) if most <= 0 else min(most, len(gpu_models))
        devices = snap.devices
        on_gpus = sum(1 for other in staying if self.held(other, snap))
        to_come = max(kept - on_gpus - 1, 0)
        # The others spread over the GPUs: this model's devices keep room for their part of them.
        here = math.ceil(to_come * len(chosen) / len(devices))
        waiting = sorted(
            (
                self.least_need(m.entry, snap)
                for m in gpu_models
                if not m.running and m is not state
            ),
            reverse=True,
        )
        reserve = sum(waiting[:here])
        room = sum(max(rooms[name], 0) for name in chosen)
        share = max(self.least_need(state.entry, snap), min(room - reserve, room // (here + 1)))
        leave = max(room - share, 0)
        index = {device.name: i for i, device in enumerate(devices)}
        targets = tuple(
            (_margin(margins, index[name]) + leave * max(rooms[name], 0) // max(room, 1)) // MIB
            for name in chosen
        )
        return targets, share

    # --- startup ----------------------------------------------------------------------------------

    def startup_misfits(self, entries: Sequence[CatalogueEntry]) -> dict[str, str]:
        """The models to load at startup that the GPUs cannot take, in order, with why: pinned
        to a GPU there is not, or no room left by the models before them (docs/operations.md)."""
        snap = self.snapshot()
        misfits: dict[str, str] = {}
        taken: dict[str, int] = {}  # what the models before it will take, per device
        for entry in (entry for entry in entries if snap.devices and on_gpu(entry)):
            rooms = self.rooms(snap.devices, [], [], _margins(entry), snap)
            rooms = {name: room - taken.get(name, 0) for name, room in rooms.items()}
            need, pinned = self.admit(ModelState.unloaded(entry), snap), _pinned(entry, rooms)
            missing = _missing_devices(pinned, rooms)
            chosen = choose_devices(need, rooms, pinned)
            if missing:
                misfits[entry.name] = (
                    f"device {', '.join(missing)} not found (GPUs: {', '.join(rooms)})"
                )
            elif chosen is None and taken:  # alone it loads with what fits, as llama.cpp's
                free = ", ".join(
                    f"{name} {max(rooms[name], 0) >> 20} MiB" for name in pinned or rooms
                )
                needs = -(-need // MIB)  # rounded up: a need shown short would seem to fit
                misfits[entry.name] = (
                    f"needs {needs} MiB on the GPUs; free beside the models before it: {free}"
                )
            else:
                for name, used in _spread(need, chosen or pinned or tuple(rooms), rooms).items():
                    taken[name] = taken.get(name, 0) + used
        return misfits
