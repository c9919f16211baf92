"""A model's worker on this router as the relay's upstream (router/relay/proxy.py).

A request holds a lease on its model from the moment the scheduler hands the model over until
the request ends (router/scheduling/leases.py): taken in the scheduler's order, loading the
model if needed, or for a replay of a resumable stream only from a worker that runs now.
"""

from __future__ import annotations

import anyio

from corral.http.disconnect import until_disconnected
from corral.http.errors import ApiError
from router.relay.conversations import stop_reason
from router.relay.relayed import Headers, Hop, Relayed
from router.scheduling.answers import scheduling_answered
from router.scheduling.copies import conversation_key
from router.scheduling.leases import Lease
from router.scheduling.scheduler import Scheduler
from router.workers.model_state import ModelState
from router.workers.worker_http import UpstreamError, UpstreamResponse, UpstreamUnreachable

__all__ = ["WorkerUpstream"]

# How long a request that found its worker unreachable waits for the router to see that worker
# exit before asking for the model again: a local crash is seen at once, a dead cluster node
# once Ray tells its agent is lost (docs/scaling.md, "Failover").
_EXIT_WAIT_SECONDS = 10.0


class WorkerUpstream:
    """The model's worker. Its request's lease is taken in the scheduler's order for its class
    and key (docs/serving.md, "Scheduling"), loading the model when it is not loaded and the
    request allows it; or, for a ``replay`` (a request that follows one of the worker's
    sessions), only from the worker that runs the model now: a replay must neither start a
    worker nor let the model be evicted under it."""

    def __init__(self, scheduler: Scheduler, state: ModelState, *, replay: bool = False) -> None:
        self._scheduler = scheduler
        self._state = state
        self._replay = replay
        # A second when the worker was stopping, or gone, as the first reached it.
        self._tries = 2
        self._lease: Lease | None = None
        self._unreachable: ModelState | None = None  # the model whose worker could not be reached

    async def open(self, relayed: Relayed) -> Hop:
        if self._replay:
            if self._scheduler.hold(self._state, relayed.scope) is None:
                raise self._gone()
            return await self._hop(relayed, self._state)
        if self._unreachable is not None:  # its exit first, else the same worker comes back
            with anyio.move_on_after(_EXIT_WAIT_SECONDS):
                await self._unreachable.wait_exited()
            self._unreachable = None
        if not relayed.autoload and not self._state.running:
            raise ApiError(400, "model is not loaded")
        self._lease = lease = await self._acquire(relayed)
        if relayed.session is not None and not relayed.session.live():
            raise ApiError(
                400, "request cancelled by DELETE /v1/stream while the model was loading"
            )
        return await self._hop(relayed, lease.state)

    async def _acquire(self, relayed: Relayed) -> Lease:
        """A lease on the model, loading it if needed. A generation takes one of the model's
        slots (``caller``); GETs do not. A resumable session's request waits for its model even
        once its client has left (docs/protocol.md §5)."""
        scheduler, scope = self._scheduler, relayed.scope
        entry = self._state.entry
        name = entry.name
        caller = relayed.caller if relayed.counted else None
        # What keeps a conversation on the copy holding its KV cache (docs/scaling.md).
        conversation = None
        if entry.most_copies > 1:
            asked = relayed.request.headers.get("x-conversation-id")
            conversation = conversation_key(asked, relayed.body)
        # Most requests find their model ready: no waiting, so no need to watch for a disconnect.
        with scheduling_answered():
            lease = scheduler.acquire_if_ready(name, scope, caller, conversation)
            if lease is None:
                waiting = scheduler.acquire(name, scope, caller, conversation)
                lease = await (
                    waiting if relayed.detached else until_disconnected(relayed.request, waiting)
                )
        return lease

    async def _hop(self, relayed: Relayed, state: ModelState) -> Hop:
        """The request's worker, its session attached with no await between the check that the
        worker runs and the send: the worker's exit (which ends its attached sessions) is
        either before both or after both."""
        client = state.client
        if client is None:  # stopped between becoming ready and now
            raise ApiError(503, f"model '{state.entry.name}' is not running")
        if relayed.session is not None:
            relayed.session.attach()
        if self._scheduler.fake_timing:  # upstream's debug hold on the slot
            await anyio.sleep(self._scheduler.fake_timing)
        return Hop(relayed, client, state)

    def outgoing(
        self, relayed: Relayed, headers: Headers, target: bytes
    ) -> tuple[Headers, bytes, bytes | None]:
        return headers, target, relayed.body

    def failed(self, hop: Hop, error: UpstreamError) -> ApiError | None:
        state = _model(hop)
        fault = _fault_error(state)
        if fault is not None:
            return fault
        if state.stop_requested:
            return self._again(hop, "was stopped before it took the request")
        if isinstance(error, UpstreamUnreachable):
            # Dead before the request reached it (a crash, or its node's death, seen by the
            # router a moment later): the request was never sent, so it may go to the next.
            self._unreachable = state
            return self._again(hop, f"is unavailable: {error}")
        return ApiError(503, f"model '{state.entry.name}' is unavailable: {error}")

    def _again(self, hop: Hop, why: str) -> ApiError | None:
        """The worker was being stopped (an unload, an eviction, a reload) or was gone between
        handing the model over and taking the request, which it never saw. Asked again, the
        scheduler waits for the stop and loads the model, as for a request a moment later."""
        if self._replay:
            return self._gone()
        self._tries -= 1
        if self._tries == 0 or not hop.relayed.autoload:  # without autoload, nothing loads it
            return ApiError(503, f"model '{_model(hop).entry.name}' {why}")
        if self._lease is not None:  # that worker is going: its lease is no use to the retry
            self._lease.release()
        if hop.relayed.session is not None:
            hop.relayed.session.detach()
        return None

    def _gone(self) -> ApiError:
        """A replay's worker is on its way out, and the session with it."""
        return ApiError(404, f"Stream not found: {stop_reason(self._state)}")

    async def answered(self, hop: Hop, answer: UpstreamResponse) -> None:
        pass

    def cut(self, hop: Hop, error: UpstreamError) -> ApiError:
        state = _model(hop)
        fault = _fault_error(state)
        return fault or ApiError(500, f"model '{state.entry.name}' stopped while answering")


def _model(hop: Hop) -> ModelState:
    assert hop.model is not None  # a worker's hop always names its model
    return hop.model


def _fault_error(state: ModelState) -> ApiError | None:
    """What a request cut by the router's fault handling is told (a stall), if that is why."""
    if state.fault_message is None:
        return None
    return ApiError(503, f"model '{state.entry.name}' {state.fault_message}")
