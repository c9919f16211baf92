"""The router's services, built in dependency order and told about each other by typed events.

Order: the spares (the pool launches through them), the pool, the scheduler over it, the
watchdog, the peers, the reloader, the downloads (a finished one reloads), the conversation
owners, the relay. Then the subscriptions: who wants to know what (router/topics.py),
each one line, or a small function for the relay's events (router/relay/proxy.py).
Startup checks happen before any of this (router/startup.py); the app only holds the result
(router/app.py).
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import structlog

from corral.cpu_threads import default_threads
from router.api.activity import take_samples
from router.api.metrics import RequestCounter
from router.api.runtime import RouterRuntime
from router.capacity.devices import ReportedDevices
from router.capacity.memory_budget import MemoryBudget
from router.catalogue.catalogue import CatalogueError
from router.catalogue.file_check import entry_problem
from router.download_jobs import DownloadJobs
from router.observe import relay_notes, waits
from router.observe.activity import Activity
from router.observe.requests import RequestHistory, RequestRecord, current_record
from router.relay.conversations import ConversationOwners
from router.relay.peers import PeerSet
from router.relay.proxy import Relay
from router.relay.relayed import Hop, Outgoing, Progress
from router.reloads import Reloader
from router.scheduling.cores import CoreShare, send_in
from router.scheduling.placement.device_planner import DevicePlanner
from router.scheduling.placement.node_planner import NodePlanner
from router.scheduling.scheduler import Scheduler
from router.scheduling.waiting_line import Caller
from router.security.cache_scope import add_cache_scope
from router.settings import ServeSettings
from router.startup import StartupPlan
from router.tools.toolbox import ToolBox
from router.workers.launcher import SubprocessLauncher, WorkerLauncher
from router.workers.pool import FAKE_TIMING_SECONDS, WorkerPool
from router.workers.spares import SpareWorkers
from router.workers.stall_watchdog import StallWatchdog

if TYPE_CHECKING:
    from router.cluster.nodes import ClusterNodes

__all__ = ["running_services"]

_log = structlog.get_logger("corral.router")


async def _joined_cluster(address: str | None) -> ClusterNodes | None:
    """The Ray cluster ``--cluster`` names, joined; None without it, and then Ray is never
    imported (docs/scaling.md: it is an optional extra)."""
    if address is None:
        return None
    from router.cluster.nodes import ClusterNodes

    nodes = ClusterNodes(address)
    # In a thread: ray.init blocks until the cluster answers, and in the main thread it takes
    # over SIGTERM (sys.exit), which is uvicorn's graceful shutdown.
    try:
        await anyio.to_thread.run_sync(nodes.connect)
    except Exception as exc:  # Ray's own errors, whatever they are: the reason is told
        _log.error("cannot join the cluster", address=address, error=str(exc))
        raise SystemExit(1) from None
    return nodes


@asynccontextmanager
async def running_services(
    settings: ServeSettings,
    plan: StartupPlan,
    tools: ToolBox,
    activity: Activity,
    launcher: WorkerLauncher | None = None,
) -> AsyncIterator[RouterRuntime]:
    """Every service running for as long as the block lasts; on the way out the workers and
    downloads are stopped and the peers closed."""
    cluster = await _joined_cluster(settings.cluster)
    async with tools.running(), anyio.create_task_group() as group:
        # On a cluster every worker runs on a node, through its agent: no spare here.
        spare_count = settings.models_spare if cluster is None else 0
        spares = SpareWorkers(launcher or SubprocessLauncher(), spare_count, group)
        pool = WorkerPool(
            plan.catalogue,
            launcher=spares,
            node_launcher=cluster.launcher if cluster is not None else None,
            task_group=group,
            timeout=settings.timeout,
            check_files=entry_problem,
            fake_timing=0.0 if settings.single_model else FAKE_TIMING_SECONDS,
        )
        # The router reads GPUs through NVML (or what workers report), never a CUDA context.
        inventory = ReportedDevices(plan.devices, lambda: pool.reported_devices)
        # What models took on the GPUs, as measured by this router or an earlier one.
        footprints = plan.footprints
        limits = settings.scheduler_limits
        planner: DevicePlanner | None = DevicePlanner(
            inventory, most_resident=limits.most_resident, footprints=footprints
        )
        nodes = None
        if cluster is not None:  # nodes, not this machine's GPUs (node_planner.py)
            await cluster.refresh()  # the nodes there are now, before the startup models load
            group.start_soon(cluster.run)
            nodes, planner = NodePlanner(cluster.capacities, MemoryBudget(0)), None
        scheduler = Scheduler(
            pool,
            limits,
            plan.budget,
            devices=planner,
            nodes=nodes,
            schedule=settings.schedule,
            wait_max=settings.schedule_wait_max,
            keep_idle=settings.schedule_keep_idle,
            # This machine's cores, as each worker counts them; a node's are its own (--cluster).
            cores=CoreShare(default_threads(), send_in(group)) if cluster is None else None,
        )
        watchdog = StallWatchdog(pool, settings)
        peers = PeerSet()
        reloader = Reloader(settings, pool, peers)
        downloads = DownloadJobs(pool, settings=settings, task_group=group, reload=reloader.reload)
        conversations = ConversationOwners()
        relay = Relay()

        spares.attach(pool, plan.budget)
        pool.exited.subscribe(lambda event: conversations.worker_exited(event.state))
        pool.exited.subscribe(lambda _: spares.fill())  # room may have come free
        reloader.reloaded.subscribe(lambda _: downloads.forget_finished())  # as upstream
        pool.events.listen(activity.timeline.on_event)
        pool.restores.subscribe(activity.history.restore_noted)
        pool.events.listen(footprints.listener(lambda: pool.models))
        scheduler.evicted.subscribe(activity.timeline.evicted)
        _note_relayed(relay)
        _schedule_relayed(relay, scheduler, activity.history)
        if settings.cache_scoped:  # else every request has the workers' one default scope
            relay.dispatching.subscribe(add_cache_scope)  # whose prompt caches it may reuse

        _log.info("models available", models=sorted(plan.catalogue.entries))
        peers.start(group, plan.peers)  # listed in the background: never in the way
        for entry in plan.startup:
            scheduler.start(pool.models[entry.name])
        spares.fill()
        group.start_soon(scheduler.unload_expired)
        group.start_soon(watchdog.run, group)
        group.start_soon(_reload_on_sighup, reloader)
        group.start_soon(downloads.sweep_stale_partials)
        runtime = RouterRuntime(
            settings,
            pool,
            scheduler,
            RequestCounter(),
            downloads,
            reloader,
            conversations,
            peers,
            activity,
            relay,
        )
        group.start_soon(take_samples, runtime)
        try:
            yield runtime
        finally:
            spares.close()
            await downloads.cancel_all()
            await pool.stop_all()
            await peers.aclose()
            if cluster is not None:
                cluster.close()
            group.cancel_scope.cancel()


def _note_relayed(relay: Relay) -> None:
    """Each request's activity record and trace follow it through the relay."""
    relay.received.subscribe(
        lambda r: relay_notes.received(r.name, r.caller.key, r.caller.priority, r.scope)
    )

    def headers(outgoing: Outgoing) -> None:
        outgoing.headers = relay_notes.request_headers(outgoing.hop.relayed.name, outgoing.headers)

    relay.dispatching.subscribe(headers)
    relay.dispatched.subscribe(lambda _: relay_notes.sent())
    relay.dispatched.subscribe(lambda _: waits.note_wait())  # once the record notes the send
    relay.first_piece.subscribe(lambda _: relay_notes.answer_began())
    relay.progress.subscribe(lambda progress: relay_notes.generated(progress.piece))


def _schedule_relayed(relay: Relay, scheduler: Scheduler, history: RequestHistory) -> None:
    """The scheduler hears of the requests its leases were taken for: a generation computes
    with its share of the cores until it ends, a POST makes its model the most recently used,
    every piece of an answer tells the stall watchdog that the worker works, and what a
    generation cost (its record's counts, once it ends) goes to its caller's share of the
    tokens (router/scheduling/waiting_line.py)."""
    callers: dict[str, Caller] = {}  # a generation's record id: whose tokens it spends

    def admitted(hop: Hop) -> None:
        if hop.model is None:  # a peer's
            return
        if hop.relayed.counted:
            if scheduler.cores is not None:
                scheduler.cores.busy(hop.model, hop.relayed.scope)
            if (record := current_record()) is not None:
                callers[record.id] = hop.relayed.caller
        if hop.relayed.request.method == "POST":  # GETs (props, slots, metrics) do not
            scheduler.touch(hop.model)

    def finished(record: RequestRecord) -> None:
        if (caller := callers.pop(record.id, None)) is not None:
            computed = max((record.prompt_tokens or 0) - (record.cached_tokens or 0), 0)
            scheduler.line.charge(caller, computed, record.completion_tokens or 0)

    def progress(news: Progress) -> None:
        if news.hop.model is not None:  # a peer's answers are watched by nobody here
            scheduler.note_progress(news.hop.model)

    relay.admitted.subscribe(admitted)
    relay.progress.subscribe(progress)
    history.finished.subscribe(finished)


async def _reload_on_sighup(reloader: Reloader) -> None:
    """SIGHUP only enqueues a reload; reloads run here, one at a time."""
    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        async for _ in signals:
            try:
                await reloader.reload()
            except CatalogueError as exc:  # keep serving the old catalogue
                _log.error("reload failed, keeping the current models", error=str(exc))
            except Exception:  # a bug must not end the router, which this task's group is
                _log.exception("reload failed, keeping the current models")
