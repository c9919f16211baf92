"""Which model owns each resumable conversation (docs/protocol.md §5), so replays find their worker.

Filled when a POST with ``X-Conversation-Id`` is routed. Each POST gets a :class:`Claim`, which
is *attached* to the model's worker at the moment the request is sent to it. Only a worker's
exit can lose a session, and only the sessions it held: the claims attached to it end, with the
reason kept for the replays that come later ("model 'X' stopped"). A claim not yet attached
(its request waits for the model's next load) stays, and that load answers it. A DELETE is the
only thing that withdraws a waiting request.

A conversation belongs to the key that started it (docs/security.md, "Key holders"): every
lookup names the caller's key id as well as the conversation id, so one key's ids never reach
another's sessions, and the worker knows each session by :attr:`Claim.session_key`, the id
behind its key's. A peer is another party (docs/security.md, "Peers"): it knows each session by
:func:`peer_key`, an opaque id, so it learns neither the key ids that tell this router's callers
apart nor the client's own id. The map is bounded, and so is each id (:data:`MAX_ID_BYTES`);
when the map is full, the caller holding the most claims loses its oldest, so a key that floods
it only pushes out its own.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import OrderedDict
from typing import Final

from corral.http.errors import ApiError
from router.workers.model_state import ModelState

__all__ = ["MAX_ID_BYTES", "Claim", "ConversationOwners", "peer_key", "session_key", "stop_reason"]

_MAX_CONVERSATIONS = 10_000
# A client's conversation id: a UUID or a chat's name, not a document (10,000 of them are kept).
MAX_ID_BYTES: Final = 256
# The peer ids' secret, this process's: a peer cannot test guesses at a key id and conversation
# against them. Claims live no longer than the process, so neither need their peer ids.
_PEER_SECRET: Final = secrets.token_bytes(16)


def stop_reason(state: ModelState) -> str:
    """Why the sessions of a stopping or stopped worker are gone, as a replay is told."""
    if state.fault_message is not None:
        return f"model '{state.name}' {state.fault_message}"
    if state.exit_code:
        return f"model '{state.name}' crashed"
    return f"model '{state.name}' stopped"


def session_key(caller: str | None, conversation: str) -> str:
    """The id a worker (or a peer) knows a caller's conversation by: behind the key's id, so
    two keys' conversations never meet there; the client's own id on a router without keys."""
    return conversation if caller is None else f"{caller}/{conversation}"


def peer_key(caller: str | None, conversation: str) -> str:
    """The id a peer knows a caller's conversation by: a keyed hash of :func:`session_key`."""
    key = session_key(caller, conversation).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(key, key=_PEER_SECRET, digest_size=16).hexdigest()


class Claim:
    """One session POST's hold on its conversation, from routing until the session is gone."""

    __slots__ = ("_claims", "attached", "caller", "conversation", "ended", "model")

    def __init__(
        self, caller: str | None, conversation: str, model: str, claims: dict[str, Claim]
    ) -> None:
        self.caller, self.conversation, self.model = caller, conversation, model
        self._claims = claims  # its caller's: a newer claim or a DELETE replaces this one
        self.attached = False  # sent to the model's current worker, whose session it now is
        self.ended: str | None = None  # why the session is gone, once it is

    @property
    def session_key(self) -> str:
        return session_key(self.caller, self.conversation)

    @property
    def peer_key(self) -> str:
        return peer_key(self.caller, self.conversation)

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
        # Each caller's claims, oldest first; None is every caller of a router without keys.
        self._callers: dict[str | None, OrderedDict[str, Claim]] = {}
        self._limit = limit
        self._count = 0

    def claim(self, caller: str | None, conversation: str, model: str) -> Claim:
        """Record ``model`` as the owner; the claim holds until replaced, forgotten or ended.
        An id over :data:`MAX_ID_BYTES` is refused (400)."""
        if len(conversation) > MAX_ID_BYTES:  # a header, read as Latin-1: a byte a character
            raise ApiError(400, f"X-Conversation-Id is longer than {MAX_ID_BYTES} bytes")
        claims = self._callers.setdefault(caller, OrderedDict())
        claim = Claim(caller, conversation, model, claims)
        self._count += conversation not in claims
        claims[conversation] = claim
        claims.move_to_end(conversation)
        while self._count > self._limit:
            # The biggest holder's oldest goes: a flood evicts its own claims, not others'.
            # Callers are the configured keys, few enough to compare on every overflow.
            biggest = max(self._callers, key=lambda name: len(self._callers[name]))
            self._callers[biggest].popitem(last=False)
            self._count -= 1
        return claim

    def find(self, caller: str | None, conversation: str) -> Claim | None:
        """The caller's latest claim on the conversation, ended or not."""
        claims = self._callers.get(caller)
        return claims.get(conversation) if claims is not None else None

    def owner(self, caller: str | None, conversation: str) -> str | None:
        """The model whose worker has (or will have) the session; None once it ended."""
        claim = self.find(caller, conversation)
        return claim.model if claim is not None and claim.ended is None else None

    def forget(self, caller: str | None, conversation: str) -> None:
        claims = self._callers.get(caller)
        if claims is not None and claims.pop(conversation, None) is not None:
            self._count -= 1

    def worker_exited(self, state: ModelState) -> None:
        """A worker exited: the sessions attached to it died with it. (A model runs at most one
        worker at a time, so the model's attached claims are that worker's.)"""
        reason = stop_reason(state)
        for claims in self._callers.values():
            for claim in claims.values():
                if claim.model == state.name and claim.attached and claim.ended is None:
                    claim.ended = reason

    def by_model(self, caller: str | None, conversations: list[str]) -> dict[str, list[str]]:
        """The caller's asked conversations that have a live owner, grouped by it."""
        grouped: dict[str, list[str]] = {}
        for conversation in conversations:
            model = self.owner(caller, conversation)
            if model is not None:
                grouped.setdefault(model, []).append(conversation)
        return grouped
