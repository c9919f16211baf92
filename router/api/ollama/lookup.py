"""Which model an Ollama request names: a 404 in Ollama's words when there is none."""

from __future__ import annotations

from dataclasses import dataclass

from corral.http.errors import ApiError
from corral.suggest import closest
from router.api.ollama.names import candidates, resolve
from router.api.runtime import RouterRuntime
from router.availability.errors import ModelNotFound
from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.answers import api_error
from router.single_model import single_model_target

__all__ = ["Found", "find_model", "find_served", "required"]


@dataclass(frozen=True, slots=True)
class Found:
    """A model to answer with: a local one (``entry``), or a peer's (``entry`` is None)."""

    name: str  # the router's name for it, which the relay routes on
    entry: CatalogueEntry | None


def find_model(rt: RouterRuntime, name: str) -> CatalogueEntry:
    """The catalogue entry an Ollama name means (in single-model mode, the one model)."""
    name = required(name, "model")
    target = single_model_target(rt.settings, rt.pool.catalogue, name) or name
    entry = resolve(rt.pool.catalogue, rt.ollama_copies, target)
    if entry is None:  # worded as on every other route: the closest names, or what there is
        catalogue = rt.pool.catalogue
        suggested = tuple(closest(name, catalogue.names()))
        raise api_error(ModelNotFound(name, suggested, catalogue.listed()))
    return entry


def find_served(rt: RouterRuntime, name: str) -> Found:
    """The model that answers an Ollama name: a local one, unless a peer that says
    ``prefer = peer`` lists it too, else the first peer that lists it (docs/scaling.md)."""
    try:
        entry = find_model(rt, name)
    except ApiError:
        for candidate in candidates(name):
            if rt.peers.route(candidate, local=False) is not None:
                return Found(candidate, None)
        raise
    if rt.peers.route(entry.name, local=True) is not None:
        return Found(entry.name, None)
    return Found(entry.name, entry)


def required(value: str, field: str) -> str:
    if not value:
        raise ApiError(400, f"{field} is required")
    return value
