"""Finding a model by name or alias (docs/protocol.md §3)."""

from __future__ import annotations

from collections.abc import Mapping

from corral.suggest import closest
from router.availability.errors import ModelNotFound
from router.catalogue.catalogue import Catalogue
from router.observe.access_log import note_model
from router.workers.model_state import ModelState

__all__ = ["find_model"]


def find_model(catalogue: Catalogue, models: Mapping[str, ModelState], name: str) -> ModelState:
    """The model of this name or alias; unknown names are :class:`ModelNotFound` on every route."""
    note_model(name)  # the access line names it, found or not; the relay renames it canonically
    entry = catalogue.resolve(name)
    if entry is None or entry.name not in models:
        raise ModelNotFound(name, tuple(closest(name, catalogue.names())), catalogue.listed())
    return models[entry.name]
