"""``GET`` and ``POST /lora-adapters``: the model's LoRA adapters and their global scales."""

from __future__ import annotations

from typing import Any

from litestar import get, post

from corral.http.errors import ApiError, decode_body
from corral.http.worker_routes import LORA_ADAPTERS, SET_LORA_ADAPTERS, worker_opt
from worker.engine.lora_adapters import LoraChoice
from worker.state import AnyRequest, loaded

__all__ = ["lora_routes"]


@get(LORA_ADAPTERS.paths)
async def list_adapters(request: AnyRequest) -> list[dict[str, Any]]:
    engine, model = loaded(request)
    # A read: a sleeping model answers from what it had loaded, without waking.
    return await engine.call(model.adapters.describe, needs_model=False)


@post(SET_LORA_ADAPTERS.paths, status_code=200, opt=worker_opt(SET_LORA_ADAPTERS))
async def set_adapters(request: AnyRequest) -> dict[str, bool]:
    """The listed scales for every request without its own ``lora``; 0 for the others."""
    engine, model = loaded(request)
    raw = await request.body()
    if not isinstance(decode_body(raw, object), list):
        raise ApiError(400, "Request body must be an array")
    chosen = model.adapters.chosen(decode_body(raw, list[LoraChoice]), "body") or {}
    # On the engine thread: a generation submitted after this answer uses the new scales.
    await engine.call(lambda: model.adapters.set_global(chosen), needs_model=False)
    return {"success": True}


lora_routes = [list_adapters, set_adapters]
