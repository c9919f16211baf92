"""Single-model mode: ``corral serve -m FILE`` (or ``-hf REPO``) behaving as llama-server.

llama-server with one model lists only that model, gives it the ``--alias`` names and
``--tags``, and answers every request with it whatever the request names (clients such as the
``openai`` package always send some model name). The router keeps its catalogue and lookups;
this module narrows the catalogue to the one model and picks it for any name.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from corral.hub.cache_scan import resolve_cached_model, scan_cache
from router.catalogue.capabilities import capabilities
from router.catalogue.catalogue import Catalogue, CatalogueEntry, model_file_path
from router.settings import ServeSettings

__all__ = ["ollama_models", "single_model_catalogue", "single_model_target"]


def _the_model(catalogue: Catalogue, settings: ServeSettings) -> CatalogueEntry | None:
    one = settings.one_model
    if one.file is not None:
        path = model_file_path(one.file)
        return next((e for e in catalogue.entries.values() if e.path == path), None)
    if settings.cache_dir is None or one.repo is None:
        return None
    cached = resolve_cached_model(scan_cache(settings.cache_dir), one.repo)
    return catalogue.entries.get(cached.name) if cached is not None else None


def single_model_catalogue(catalogue: Catalogue, settings: ServeSettings) -> Catalogue:
    """In single-model mode, only that model, named and tagged by ``--alias``/``--tags``.

    As llama-server, the first alias (in sorted order) is the model's id, the one responses
    report; the file's own name stays an alias. Outside single-model mode, or for a ``-hf``
    model missing from the cache (startup then fails saying why), the catalogue is unchanged.
    """
    if not settings.single_model:
        return catalogue
    entry = _the_model(catalogue, settings)
    if entry is None:
        return catalogue
    one = settings.one_model
    names = sorted(set(one.names))
    name = names[0] if names else entry.name
    aliases = tuple(sorted({*names, entry.name} - {name}))
    tags = tuple(sorted(set(one.tags))) or entry.tags
    return Catalogue({name: replace(entry, name=name, aliases=aliases, tags=tags)})


def single_model_target(
    settings: ServeSettings, catalogue: Catalogue, name: str | None
) -> str | None:
    """The model a request goes to: in single-model mode the one model when the request names
    none or a name nobody has; otherwise the name as given."""
    if not settings.single_model or len(catalogue.entries) != 1:
        return name
    if name and catalogue.resolve(name) is not None:
        return name
    return next(iter(catalogue.entries))


def ollama_models(entry: CatalogueEntry) -> list[dict[str, Any]]:
    """llama-server's single-model ``/v1/models`` also has an Ollama-style ``models`` list
    (``server-context.cpp``, ``get_res_models``); clients of that shape read it, placeholders
    and all."""
    return [
        {
            "name": entry.name,
            "model": entry.name,
            "modified_at": "",
            "size": "",
            "digest": "",
            "type": "model",
            "description": "",
            "tags": [""],
            "capabilities": capabilities(entry).llama_server_words(),
            "parameters": "",
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "",
                "families": [""],
                "parameter_size": "",
                "quantization_level": "",
            },
        }
    ]
