"""Which model owns each resumable conversation (docs/protocol.md §5), so replays find their worker.

Filled when a POST with ``X-Conversation-Id`` is routed. Each claim gets a ticket: a DELETE
while the model still loads withdraws the ticket, and the parked request then fails instead of
starting a generation nobody wants. Entries go when their model stops, and the map is bounded.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["ConversationOwners"]

_MAX_CONVERSATIONS = 10_000


class ConversationOwners:
    def __init__(self, limit: int = _MAX_CONVERSATIONS) -> None:
        self._owners: OrderedDict[str, tuple[str, object]] = OrderedDict()
        self._limit = limit

    def claim(self, conversation: str, model: str) -> object:
        """Record ``model`` as the owner; the returned ticket stays valid until replaced."""
        ticket = object()
        self._owners[conversation] = (model, ticket)
        self._owners.move_to_end(conversation)
        while len(self._owners) > self._limit:  # the oldest conversations go first
            self._owners.popitem(last=False)
        return ticket

    def owner(self, conversation: str) -> str | None:
        entry = self._owners.get(conversation)
        return entry[0] if entry is not None else None

    def holds(self, conversation: str, ticket: object) -> bool:
        entry = self._owners.get(conversation)
        return entry is not None and entry[1] is ticket

    def forget(self, conversation: str) -> None:
        self._owners.pop(conversation, None)

    def forget_model(self, model: str) -> None:
        """The model stopped: its sessions died with its worker."""
        for conversation in [c for c, (m, _) in self._owners.items() if m == model]:
            del self._owners[conversation]

    def by_model(self, conversations: list[str]) -> dict[str, list[str]]:
        """The asked conversations that have an owner, grouped by it."""
        grouped: dict[str, list[str]] = {}
        for conversation in conversations:
            model = self.owner(conversation)
            if model is not None:
                grouped.setdefault(model, []).append(conversation)
        return grouped
