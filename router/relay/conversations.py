"""Which model owns each resumable conversation (docs/protocol.md §5), so replays find their worker.

Filled when a POST with ``X-Conversation-Id`` is routed. Each POST gets a :class:`Claim`, which
is *attached* to the model's worker at the moment the request is sent to it. Only a worker's
exit can lose a session, and only the sessions it held: the claims attached to it end, with the
reason kept for the replays that come later ("model 'X' stopped"). A claim not yet attached
(its request waits for the model's next load) stays, and that load answers it. A DELETE is the
only thing that withdraws a waiting request. The map is bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from router.workers.model_state import ModelState

__all__ = ["Claim", "ConversationOwners", "stop_reason"]

_MAX_CONVERSATIONS = 10_000


def stop_reason(state: ModelState) -> str:
    """Why the sessions of a stopping or stopped worker are gone, as a replay is told."""
    if state.fault_message is not None:
        return f"model '{state.name}' {state.fault_message}"
    if state.exit_code:
        return f"model '{state.name}' crashed"
    return f"model '{state.name}' stopped"


class Claim:
    """One session POST's hold on its conversation, from routing until the session is gone."""

    __slots__ = ("_claims", "attached", "conversation", "ended", "model")

    def __init__(self, conversation: str, model: str, claims: Mapping[str, Claim]) -> None:
        self.conversation, self.model = conversation, model
        self._claims = claims  # the owners' map: a newer claim or a DELETE replaces this one
        self.attached = False  # sent to the model's current worker, whose session it now is
        self.ended: str | None = None  # why the session is gone, once it is

    def live(self) -> bool:
        """Still the conversation's claim: not replaced, forgotten (DELETE) or ended."""
        return self._claims.get(self.conversation) is self and self.ended is None

    def attach(self) -> None:
        """Its request is being sent to the model's worker: the session is that worker's now."""
        self.attached = True

    def detach(self) -> None:
        """Its request never reached that worker (it was stopping): the session will be the
        next worker's, whatever that worker's exit said of it."""
        self.attached, self.ended = False, None

    def fail(self, reason: str) -> None:
        """Its request failed before reaching a worker: no session will exist."""
        if self.live() and not self.attached:
            self.ended = reason


class ConversationOwners:
    def __init__(self, limit: int = _MAX_CONVERSATIONS) -> None:
        self._claims: OrderedDict[str, Claim] = OrderedDict()
        self._limit = limit

    def claim(self, conversation: str, model: str) -> Claim:
        """Record ``model`` as the owner; the claim holds until replaced, forgotten or ended."""
        claim = Claim(conversation, model, self._claims)
        self._claims[conversation] = claim
        self._claims.move_to_end(conversation)
        while len(self._claims) > self._limit:  # the oldest conversations go first
            self._claims.popitem(last=False)
        return claim

    def find(self, conversation: str) -> Claim | None:
        """The conversation's latest claim, ended or not."""
        return self._claims.get(conversation)

    def owner(self, conversation: str) -> str | None:
        """The model whose worker has (or will have) the session; None once it ended."""
        claim = self._claims.get(conversation)
        return claim.model if claim is not None and claim.ended is None else None

    def forget(self, conversation: str) -> None:
        self._claims.pop(conversation, None)

    def worker_exited(self, state: ModelState) -> None:
        """A worker exited: the sessions attached to it died with it. (A model runs at most one
        worker at a time, so the model's attached claims are that worker's.)"""
        reason = stop_reason(state)
        for claim in self._claims.values():
            if claim.model == state.name and claim.attached and claim.ended is None:
                claim.ended = reason

    def by_model(self, conversations: list[str]) -> dict[str, list[str]]:
        """The asked conversations that have a live owner, grouped by it."""
        grouped: dict[str, list[str]] = {}
        for conversation in conversations:
            model = self.owner(conversation)
            if model is not None:
                grouped.setdefault(model, []).append(conversation)
        return grouped
