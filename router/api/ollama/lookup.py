"""Which model an Ollama request names: a 404 in Ollama's words when there is none."""

from __future__ import annotations

from corral.http.errors import ApiError
from router.api.ollama.names import resolve
from router.api.runtime import RouterRuntime
from router.catalogue.catalogue import CatalogueEntry
from router.single_model import single_model_target

__all__ = ["find_model", "required"]


def find_model(rt: RouterRuntime, name: str) -> CatalogueEntry:
    """The catalogue entry an Ollama name means (in single-model mode, the one model)."""
    name = required(name, "model")
    target = single_model_target(rt.settings, rt.pool.catalogue, name) or name
    entry = resolve(rt.pool.catalogue, rt.ollama_copies, target)
    if entry is None:
        raise ApiError(404, f"model '{name}' not found")
    return entry


def required(value: str, field: str) -> str:
    if not value:
        raise ApiError(400, f"{field} is required")
    return value
