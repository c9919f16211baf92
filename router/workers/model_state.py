"""A model's runtime state (docs/protocol.md §4): written by the worker pool, read by all others.

:class:`ModelFields` is the mutable record; only :class:`~router.workers.pool.WorkerPool` holds
one and writes to it. Every other module sees a :class:`ModelState`, a read-only view of it, so
a scheduling decision can never be undone by a stray assignment elsewhere.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from corral.children.device_use import DeviceUse, OutOfMemory
from router.capacity.placement import Placement
from router.catalogue.catalogue import CatalogueEntry
from router.workers.launcher import ChildProcess

if TYPE_CHECKING:
    from router.workers.child_supervisor import ChildSupervisor
    from router.workers.worker_http import WorkerClient

__all__ = ["BAD_FILE", "ModelFields", "ModelState", "Status"]

# ``/models``' failure reason for a model whose files the router refused to start (docs/api.md).
BAD_FILE = "bad_file"


class Status(enum.StrEnum):
    UNLOADED = "unloaded"
    LOADING = "loading"
    LOADED = "loaded"
    SLEEPING = "sleeping"


@dataclass
class ModelFields:
    entry: CatalogueEntry
    args: list[str]
    status: Status = Status.UNLOADED
    supervisor: ChildSupervisor | None = None
    client: WorkerClient | None = None
    meta: dict[str, Any] | None = None
    progress: dict[str, Any] | None = None
    exit_code: int | None = None
    error: str | None = None
    failures: int = 0  # consecutive failed loads, for the retry backoff
    failed_at: float = 0.0
    stop_requested: bool = False
    load_seconds: float = 0.0
    ready_at: float = 0.0  # when its worker last finished loading (a minimum residency starts)
    loads: int = 0
    load_seconds_total: float = 0.0
    failures_total: int = 0
    in_flight: int = 0
    last_used: float = 0.0
    peak_memory: int = 0  # the most its worker was seen to hold, for the memory budget
    # On the GPUs (docs/operations.md, GPUs): where the router put it when it started, what its
    # worker reported once loaded (its DeviceUse list: bytes and layers per device, CPU too),
    # and the most it was seen to take on the GPUs, which is what it is expected to need next.
    placement: Placement | None = None
    device_use: list[DeviceUse] = field(default_factory=list)
    gpu_peak: int = 0
    out_of_memory: OutOfMemory | None = None  # why its last load failed, if for memory
    # When the worker last showed it is working (docs/operations.md, Faults): a load message,
    # bytes of an answer, an answered liveness probe. The stall watchdog reads it.
    last_progress: float = 0.0
    answered: bool = False  # its worker sent bytes of an answer since it was started
    # Why the router killed the worker ("stalled", "load_stalled") and what its requests are
    # told ("stalled: no progress for 60 s"), until its next start.
    fault: str | None = None
    fault_message: str | None = None
    # Its last start was refused: the file check found one of its files unusable (``error``).
    bad_file: bool = False
    # A request's keep-alive (Ollama's ``keep_alive``), seconds idle before the ttl unloads the
    # worker, ``inf`` never; None: the entry's ``ttl``. Until the worker exits.
    keep_alive: float | None = None
    exited: anyio.Event = field(default_factory=anyio.Event)  # set while no worker runs
    copy: int = 0  # which of the model's ``replicas`` this is (0: the first, which lookups find)

    def __post_init__(self) -> None:
        if self.status is Status.UNLOADED:
            self.exited.set()


class ModelState:
    """A read-only view of one model's :class:`ModelFields`; the same view for its lifetime."""

    __slots__ = ("__weakref__", "_fields")

    def __init__(self, fields: ModelFields) -> None:
        self._fields = fields

    @classmethod
    def unloaded(cls, entry: CatalogueEntry) -> ModelState:
        """A model that never ran: what the memory budget expects of it, before anything runs."""
        return cls(ModelFields(entry, []))

    def __repr__(self) -> str:
        copy = f"#{self.copy}" if self.copy else ""
        return f"ModelState({self.name!r}{copy}, {self.status.value})"

    @property
    def entry(self) -> CatalogueEntry:
        return self._fields.entry

    @property
    def name(self) -> str:
        return self._fields.entry.name

    @property
    def copy(self) -> int:
        """Which worker copy of its model this is (``replicas``, docs/scaling.md); 0 the first."""
        return self._fields.copy

    @property
    def named(self) -> dict[str, str | int]:
        """Log fields that name it: its model, and which copy for a model with ``replicas``."""
        copy = {"copy": self.copy} if self._fields.entry.most_copies > 1 else {}
        return {"model": self.name, **copy}

    @property
    def args(self) -> list[str]:
        return list(self._fields.args)

    @property
    def status(self) -> Status:
        return self._fields.status

    @property
    def process(self) -> ChildProcess | None:
        supervisor = self._fields.supervisor
        return supervisor.process if supervisor is not None else None

    @property
    def client(self) -> WorkerClient | None:
        return self._fields.client

    @property
    def meta(self) -> dict[str, Any] | None:
        return self._fields.meta

    @property
    def exit_code(self) -> int | None:
        return self._fields.exit_code

    @property
    def error(self) -> str | None:
        return self._fields.error

    @property
    def failures(self) -> int:
        return self._fields.failures

    @property
    def failed_at(self) -> float:
        return self._fields.failed_at

    @property
    def stop_requested(self) -> bool:
        return self._fields.stop_requested

    @property
    def ready_at(self) -> float:
        return self._fields.ready_at

    @property
    def loads(self) -> int:
        return self._fields.loads

    @property
    def load_seconds(self) -> float:
        """How long the last load took."""
        return self._fields.load_seconds

    @property
    def load_seconds_total(self) -> float:
        return self._fields.load_seconds_total

    @property
    def failures_total(self) -> int:
        return self._fields.failures_total

    @property
    def in_flight(self) -> int:
        return self._fields.in_flight

    @property
    def last_used(self) -> float:
        return self._fields.last_used

    @property
    def peak_memory(self) -> int:
        return self._fields.peak_memory

    @property
    def placement(self) -> Placement | None:
        return self._fields.placement

    @property
    def node(self) -> str | None:
        """The cluster node its worker runs on (``--cluster``), if any."""
        placement = self._fields.placement
        return placement.node if placement is not None else None

    @property
    def device_use(self) -> list[DeviceUse]:
        """What the worker reported per device once loaded (DeviceUse), CPU included."""
        return list(self._fields.device_use)

    @property
    def gpu_bytes(self) -> dict[str, int]:
        """Bytes per local GPU the loaded worker reported it holds: weights, context, compute."""
        return {
            use.name: use.model_bytes + use.context_bytes + use.compute_bytes
            for use in self._fields.device_use
            if use.name != "CPU" and not use.name.startswith("RPC")  # another machine's
        }

    @property
    def gpu_held(self) -> dict[str, int]:
        """What the worker holds per GPU now by its own report: :attr:`gpu_bytes`, or nothing
        while it sleeps (its weights and KV cache are freed; its CUDA context, a few hundred MiB,
        only the driver counts)."""
        return {} if self.status is Status.SLEEPING else self.gpu_bytes

    @property
    def gpu_peak(self) -> int:
        return self._fields.gpu_peak

    @property
    def out_of_memory(self) -> OutOfMemory | None:
        return self._fields.out_of_memory

    @property
    def last_progress(self) -> float:
        return self._fields.last_progress

    @property
    def fault(self) -> str | None:
        return self._fields.fault

    @property
    def bad_file(self) -> bool:
        """Its last start was refused for an unusable file; ``error`` says what is wrong."""
        return self._fields.bad_file

    @property
    def keep_alive(self) -> float | None:
        return self._fields.keep_alive

    @property
    def fault_message(self) -> str | None:
        return self._fields.fault_message

    @property
    def failure_reason(self) -> str:
        """Why its last run failed, as ``/models`` says it: the router's fault (``stalled``,
        ``load_stalled``), ``bad_file`` (refused before it started), ``out_of_memory`` on a
        device, else ``crashed``."""
        if self.fault is not None:
            return self.fault
        if self._fields.bad_file:
            return BAD_FILE
        return "out_of_memory" if self.out_of_memory is not None else "crashed"

    @property
    def failed(self) -> bool:
        return self.status is Status.UNLOADED and bool(self.exit_code)

    @property
    def running(self) -> bool:
        return self.status is not Status.UNLOADED

    @property
    def serving(self) -> bool:
        """Loaded (or asleep, which a request wakes) and not on its way out."""
        return self.status in (Status.LOADED, Status.SLEEPING) and not self.stop_requested

    async def wait_exited(self) -> None:
        """Until the current worker has exited (at once when none runs)."""
        await self._fields.exited.wait()
