"""The router's own Prometheus metrics (``GET /metrics``, docs/protocol.md §3).

Rendered by hand in the text exposition format: a dozen series do not justify a dependency, and
the tests parse the output with prometheus_client's own parser to keep it honest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from corral.prometheus import escape_label, prometheus_family
from router.relay.peers import PeerStats
from router.scheduling.scheduler import Scheduler
from router.workers.model_state import ModelState, Status
from router.workers.pool import WorkerPool

__all__ = ["RequestCounter", "render_metrics"]


# The per-model counters, each also per copy: (name, ModelState field, help).
_COUNTERS = (
    ("loads_total", "loads", "Completed model loads."),
    ("load_seconds_total", "load_seconds_total", "Time spent loading, summed."),
    ("failures_total", "failures_total", "Workers that failed or crashed."),
)
_IN_FLIGHT = ("active_requests", "in_flight", "Proxied requests in flight.")


class RequestCounter:
    """Proxied requests by route and final status."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, int]] = Counter()

    def count(self, route: str, status: int) -> None:
        self.counts[(route, status)] += 1


def _peer_lines(peers: Mapping[str, PeerStats]) -> list[str]:
    named = sorted(peers.items())

    def label(name: str) -> str:
        return f'peer="{escape_label(name)}"'

    lines = prometheus_family(
        "corral_peer_requests_total",
        "counter",
        "Requests relayed to a peer that it answered, by the peer's HTTP status.",
        (
            (f'{{{label(name)},status="{status}"}}', count)
            for name, stats in named
            for status, count in sorted(stats.responses.items())
        ),
    )
    lines += prometheus_family(
        "corral_peer_errors_total",
        "counter",
        "Relays that failed: peer unreachable, cut mid-answer, or our key refused.",
        ((f"{{{label(name)}}}", stats.errors) for name, stats in named),
    )
    lines += prometheus_family(
        "corral_peer_response_seconds_total",
        "counter",
        "Time until a peer's answers began (status and headers), summed; divide by requests.",
        ((f"{{{label(name)}}}", stats.seconds) for name, stats in named),
    )
    return lines


def _device_lines(scheduler: Scheduler, models: list[tuple[str, ModelState]]) -> list[str]:
    """Each GPU's memory as its driver says now, and what each running model holds on it."""
    planner = scheduler.devices
    snap = planner.snapshot() if planner is not None else None  # one reading for the page
    devices = snap.devices if snap is not None else []

    def label(name: str) -> str:
        return f'{{device="{escape_label(name)}"}}'

    lines: list[str] = []
    for what, help_text in (
        ("total", "Each GPU's memory."),
        ("free", "Each GPU's free memory, as its driver says now."),
        ("used", "Each GPU's used memory, by Corral's models and anything else."),
    ):
        lines += prometheus_family(
            f"corral_device_memory_{what}_bytes",
            "gauge",
            help_text,
            ((label(device.name), getattr(device, what)) for device in devices),
        )
    lines += prometheus_family(
        "corral_model_device_memory_bytes",
        "gauge",
        "What each running model's worker holds on each GPU: as the driver counts its process, "
        "else as the worker reported (weights, KV, compute).",
        (
            (f'{{model="{escape_label(name)}",device="{escape_label(device)}"}}', held)
            for name, state in models
            if state.running and planner is not None
            for device, held in sorted(planner.in_use(state, snap).items())
        ),
    )
    return lines


def _queue_lines(
    scheduler: Scheduler, models: list[tuple[str, ModelState]], by_key: bool
) -> list[str]:
    """The queue per model (docs/serving.md, "Scheduling"): who waits, and why; which keys
    wait only ``by_key`` (for an admin: their ids tell key holders apart, as in /models)."""
    views = [(name, view) for name, state in models if (view := scheduler.queue_view(state))]

    def label(name: str, what: str, value: str) -> str:
        return f'{{model="{escape_label(name)}",{what}="{escape_label(value)}"}}'

    families = [("corral_queue_waiting", "class", "class")]
    if by_key:
        families.append(("corral_queue_waiting_by_key", "key", "key id (empty: no key)"))
    lines: list[str] = []
    for family, what, about in families:
        lines += prometheus_family(
            family,
            "gauge",
            f"Requests waiting, per model and {about}.",
            (
                (label(name, what, value), count)
                for name, view in views
                for value, count in sorted((view.classes if what == "class" else view.keys).items())
            ),
        )
    lines += prometheus_family(
        "corral_queue_waiting_reason",
        "gauge",
        "1 for why a model's requests wait: loading, memory, busy, aging or queued.",
        ((label(name, "reason", view.reason or ""), 1) for name, view in views),
    )
    return lines


def render_metrics(
    pool: WorkerPool,
    scheduler: Scheduler,
    requests: RequestCounter,
    peers: Mapping[str, PeerStats] | None = None,
    *,
    by_key: bool = True,
) -> str:
    """The exposition text; reads only, so scraping never changes a scheduling decision.
    ``by_key``: with the waiting requests of each key id (an admin's scrape)."""
    models = sorted(pool.models.items())

    def per_model(value: str) -> str:
        return f'{{model="{escape_label(value)}"}}'

    lines = prometheus_family(
        "corral_model_status",
        "gauge",
        "1 for the status each model is in.",
        (
            (
                f'{{model="{escape_label(name)}",status="{status.value}"}}',
                float(state.status is status),
            )
            for name, state in models
            for status in Status
        ),
    )
    # Every copy (``replicas``): a model with copies on two nodes is on both.
    on_nodes = [(c.name, c.node) for c in pool.workers if c.running and c.node]
    lines += (
        []
        if not on_nodes
        else prometheus_family(
            "corral_model_node",
            "gauge",
            "1 for each cluster node a running model's worker is on (--cluster).",
            (
                (f'{{model="{escape_label(name)}",node="{escape_label(node)}"}}', 1)
                for name, node in on_nodes
            ),
        )
    )
    # A model's counts are its copies' summed; each copy's are in the ``corral_replica_`` ones.
    for what, field, help_text in _COUNTERS:
        lines += prometheus_family(
            f"corral_model_{what}",
            "counter",
            help_text,
            (
                (per_model(name), sum(getattr(c, field) for c in pool.copies(name)))
                for name, _ in models
            ),
        )
    lines += prometheus_family(
        "corral_active_requests",
        "gauge",
        "Proxied requests in flight, streams included.",
        ((per_model(name), sum(c.in_flight for c in pool.copies(name))) for name, _ in models),
    )
    copies = [c for c in pool.workers if c.entry.most_copies > 1]
    for what, field, help_text in [*_COUNTERS, _IN_FLIGHT] if copies else []:
        lines += prometheus_family(
            f"corral_replica_{what}",
            "gauge" if field == "in_flight" else "counter",
            f"{help_text} Per worker copy of a model with replicas.",
            (
                (f'{{model="{escape_label(c.name)}",copy="{c.copy}"}}', getattr(c, field))
                for c in copies
            ),
        )
    if (cores := scheduler.cores) is not None:
        lines += prometheus_family(
            "corral_model_threads",
            "gauge",
            "Threads each running model's worker was given: the CPU cores shared among the busy "
            "ones (a model that sets threads, threads-batch, cpu-mask or cpu-range is left out).",
            (
                (per_model(name), threads)
                for name, state in models
                if state.running and (threads := cores.threads(state)) is not None
            ),
        )
    lines += prometheus_family(
        "corral_evictions_total",
        "counter",
        "Idle models stopped to make room.",
        [("", scheduler.evictions)],
    )
    lines += prometheus_family(
        "corral_queue_depth",
        "gauge",
        "Requests waiting for a model: to load, or for a slot (--schedule swap).",
        [("", scheduler.queue_depth)],
    )
    lines += prometheus_family(
        "corral_queue_rejections_total",
        "counter",
        "Requests refused with 503 because --max-queue requests were waiting already.",
        [("", scheduler.places.rejections)],
    )
    lines += prometheus_family(
        "corral_queue_waits_total",
        "counter",
        "Requests that waited for a load.",
        [("", scheduler.waits)],
    )
    lines += prometheus_family(
        "corral_queue_wait_seconds_total",
        "counter",
        "Time requests spent waiting, summed.",
        [("", scheduler.wait_seconds)],
    )
    lines += _queue_lines(scheduler, models, by_key)
    if scheduler.memory is not None:
        budget = scheduler.memory
        lines += prometheus_family(
            "corral_models_memory_max_bytes",
            "gauge",
            "The memory budget (--models-memory-max).",
            [("", budget.limit)],
        )
        lines += prometheus_family(
            "corral_model_memory_bytes",
            "gauge",
            "What each model counts for in the budget: held if running, else expected.",
            (
                (per_model(name), budget.held(state) if state.running else budget.expected(state))
                for name, state in models
            ),
        )
    lines += _device_lines(scheduler, models)
    lines += prometheus_family(
        "corral_requests_total",
        "counter",
        "Proxied requests by route and HTTP status.",
        (
            (f'{{route="{escape_label(route)}",status="{status}"}}', count)
            for (route, status), count in sorted(requests.counts.items())
        ),
    )
    if peers:
        lines += _peer_lines(peers)
    return "\n".join(lines) + "\n"
