"""What Ollama's ``/api/tags``, ``/api/ps`` and ``/api/show`` say of Corral's models.

Everything comes from the catalogue, the models' GGUF headers (router/catalogue/model_details.py)
and the worker pool; nothing here is Ollama's own store.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from corral.options.sampling_fields import SAMPLING_FIELDS
from router.api.ollama.names import Copies, ollama_name, tagged
from router.capacity.memory_budget import resident_memory
from router.catalogue.capabilities import CHAT_TEMPLATE, capabilities
from router.catalogue.catalogue import CatalogueEntry
from router.catalogue.listing import ModelListing
from router.catalogue.model_details import ModelDetails, human_parameters, model_details
from router.workers.model_state import ModelState

__all__ = [
    "memory_in_ps",
    "peer_models",
    "running_models",
    "show_model",
    "tagged_models",
    "timestamp",
]

# Ollama says "for ever" as a time about 292 years from now (Go's longest duration).
_FOREVER = timedelta(days=106_751)
# A model's options that Ollama's Modelfile names as parameters, by Corral's option names.
_PARAMETERS = {
    "ctx-size": "num_ctx",
    "n-predict": "num_predict",
    "keep": "num_keep",
    **{row.option: row.ollama for row in SAMPLING_FIELDS if row.modelfile},
}


def timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _details(details: ModelDetails) -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": details.family,
        "families": [details.family] if details.family else None,
        "parameter_size": human_parameters(details.parameters),
        "quantization_level": details.quantization,
    }


def _model(name: str, details: ModelDetails) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": timestamp(details.modified),
        "size": details.size,
        "digest": details.digest,
        "details": _details(details),
    }


def _names_of(entry: CatalogueEntry, copies: Copies) -> list[str]:
    """Every Ollama name of a model: its own, its aliases', its copies'."""
    names = [ollama_name(entry), *(ollama_name(entry, alias) for alias in entry.aliases)]
    return names + [ollama_name(entry, copy) for copy in copies.of(entry.name)]


def tagged_models(entries: list[CatalogueEntry], copies: Copies) -> list[dict[str, Any]]:
    """``/api/tags``: every model under each of its names (reads headers: run in a thread)."""
    models = []
    for entry in entries:
        try:
            details = model_details(entry)
        except OSError:  # the file went away since the catalogue was read
            continue
        models += [_model(name, details) for name in _names_of(entry, copies)]
    return models


def peer_models(listings: list[ModelListing]) -> list[dict[str, Any]]:
    """``/api/tags``' entries for the models peers answer for: Ollama's remote models' shape
    (``remote_model``, ``remote_host``), with no size or digest, which only the peer knows."""
    models = []
    for listing in listings:
        model = {"name": tagged(listing.id), "model": tagged(listing.id)}
        model["modified_at"] = timestamp(listing.created)
        if isinstance(listing.remote_id, str):
            model["remote_model"] = listing.remote_id
        if isinstance(listing.status.url, str):
            model["remote_host"] = listing.status.url
        models.append(model)
    return models


# A running worker copy as ``/api/ps`` reads it: the copy, when its keep-alive ends (None:
# never) and the bytes it holds per GPU.
RunningCopy = tuple[ModelState, float | None, dict[str, int]]


def running_models(models: list[list[RunningCopy]], copies: Copies) -> list[dict[str, Any]]:
    """``/api/ps``: models with a worker, one entry per model as Ollama lists them, its worker
    copies (``replicas``) together: what they hold in all (``on_gpus``: bytes per GPU, as
    ``GET /models`` reads them) and when the last keep-alive (or ttl) ends."""
    now = datetime.now(UTC)
    entries = []
    for running in models:
        state = running[0][0]
        try:
            details = model_details(state.entry)
        except OSError:
            continue
        model = _model(_names_of(state.entry, copies)[0], details)
        del model["modified_at"]
        held = [memory_in_ps(c, gpus, resident_memory(c), details.size) for c, _, gpus in running]
        model["size"] = sum(memory["size"] for memory in held)
        if all("size_vram" in memory for memory in held):
            model["size_vram"] = sum(memory["size_vram"] for memory in held)
        meta = state.meta or {}
        if "n_ctx" in meta:
            model["context_length"] = meta["n_ctx"]
        ends = [expires_in for _, expires_in, _ in running if expires_in is not None]
        until = _FOREVER if len(ends) < len(running) else timedelta(seconds=max(ends))
        model["expires_at"] = (now + until).isoformat().replace("+00:00", "Z")
        entries.append(model)
    return entries


def memory_in_ps(
    state: ModelState, on_gpus: dict[str, int], rss: int | None, file_size: int
) -> dict[str, int]:
    """Ollama's ``size`` (all the model holds) and ``size_vram`` (the part on GPUs): the GPU
    bytes the device planner reads (the driver's, else the worker's report), plus the worker's
    resident memory ``rss`` (else the file's size). ``size_vram`` is left out where the worker
    put layers on a GPU whose bytes nobody measured, rather than guessed."""
    vram = sum(on_gpus.values())
    memory = {"size": vram + rss if rss is not None else max(file_size, vram)}
    devices = (state.meta or {}).get("devices")
    on_cpu = isinstance(devices, list) and all(
        str(device.get("name", "")).upper().startswith("CPU") for device in devices
    )
    if vram or on_cpu:
        memory["size_vram"] = vram
    return memory


def _parameters(entry: CatalogueEntry) -> str:
    rows = [(_PARAMETERS[key], value) for key, value in entry.options if key in _PARAMETERS]
    return "\n".join(f"{name:<30} {value}" for name, value in rows)


def show_model(entry: CatalogueEntry, *, paths: bool = True) -> dict[str, Any]:
    """``/api/show``: the GGUF's template, header and capabilities, and the model's options
    (reads the header: run in a thread). Without ``paths`` (an inference key, docs/security.md)
    the Modelfile says ``FROM`` the model's name rather than its file's path."""
    details = model_details(entry)
    template = str(details.metadata.get(CHAT_TEMPLATE, ""))
    info: dict[str, Any] = {k: v for k, v in details.metadata.items() if k != CHAT_TEMPLATE}
    info["general.parameter_count"] = details.parameters
    parameters = _parameters(entry)
    modelfile = f"# Modelfile generated by Corral\nFROM {entry.path if paths else entry.name}\n"
    modelfile += "".join(f"PARAMETER {line}\n" for line in parameters.splitlines())
    return {
        "license": str(details.metadata.get("general.license", "")),
        "modelfile": modelfile,
        "parameters": parameters,
        "template": template,
        "details": _details(details),
        "model_info": info,
        "capabilities": capabilities(entry, details.metadata).ollama_words(),
        "modified_at": timestamp(details.modified),
    }
