"""What a catalogue reload changes for the running models (docs/protocol.md §2).

Running models whose entry changed or vanished are stopped first; every other model keeps its
state (a running one keeps running); new models, and models with new settings, start unloaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from router.catalogue.catalogue import Catalogue

if TYPE_CHECKING:
    from router.workers.model_state import ModelState

__all__ = ["carried_over", "stale_models"]


def stale_models(states: Iterable[ModelState], catalogue: Catalogue) -> list[ModelState]:
    """Running workers (every copy of a model) the new catalogue no longer describes: they must
    stop before it applies."""
    return [
        state
        for state in states
        if state.running and catalogue.entries.get(state.name) != state.entry
    ]


def carried_over(models: Mapping[str, ModelState], catalogue: Catalogue) -> dict[str, ModelState]:
    """The models whose state survives into the new catalogue, by name."""
    return {
        name: state for name, state in models.items() if catalogue.entries.get(name) == state.entry
    }
