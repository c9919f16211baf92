"""Router-local routes: health, router props and the model list (SPEC §3)."""

from __future__ import annotations

import time
from importlib.metadata import version
from typing import Any

from litestar import Request, get
from litestar.response.base import ASGIResponse

from router.proxy import forward
from router.registry import ModelRegistry, ModelState
from router.settings import ServeSettings

__all__ = ["model_routes"]

AnyRequest = Request[Any, Any, Any]


@get(["/health", "/v1/health"])
async def health() -> dict[str, str]:
    return {"status": "ok"}


@get("/props")
async def props(request: AnyRequest, model: str | None = None) -> dict[str, Any] | ASGIResponse:
    if model:
        registry: ModelRegistry = request.app.state.registry
        return await forward(request, registry, model, None)
    settings: ServeSettings = request.app.state.settings
    return {
        "role": "router",
        "max_instances": settings.models_max,
        "models_autoload": settings.models_autoload,
        # Placeholders upstream sends so llama.cpp's own Web UI does not break.
        "model_alias": "llama-server",
        "model_path": "none",
        "default_generation_settings": {"params": {}, "n_ctx": 0},
        "ui_settings": {},
        "build_info": f"corral-{version('corral')}",
        "cors_proxy_enabled": False,
    }


def _status(state: ModelState) -> dict[str, Any]:
    status: dict[str, Any] = {
        "value": state.status.value,
        "args": state.args,
        "preset": f"[{state.entry.name}]\nmodel = {state.entry.path}\n\n",
    }
    if state.failed:
        status.update(failed=True, exit_code=state.exit_code, error=state.error)
    return status


def _entry(state: ModelState, created: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": state.entry.name,
        "aliases": [],
        "tags": [],
        "object": "model",
        "owned_by": "llamacpp",
        "created": created,
        "status": _status(state),
        "source": state.entry.source,
        "can_remove": state.entry.source == "cache",
    }
    if state.running and state.meta is not None:
        entry["meta"] = state.meta
    return entry


@get(["/models", "/v1/models"])
async def list_models(request: AnyRequest) -> dict[str, Any]:
    registry: ModelRegistry = request.app.state.registry
    created = int(time.time())
    return {
        "object": "list",
        "data": [_entry(registry.models[name], created) for name in sorted(registry.models)],
    }


model_routes = [health, props, list_models]
