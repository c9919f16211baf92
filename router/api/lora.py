"""``GET`` and ``POST /lora-adapters``: a model's LoRA adapters, and their global scales set
through the router.

The body is llama-server's array of ``{id, scale}``, which has no room for ``model``, so the
model comes from ``?model=`` as on the per-model GET routes (in single-model mode the one model).
The scales hold for every client of that model, so only an admin key may set them; an inference
key chooses scales for its own requests with the ``lora`` field (docs/api.md), and sees each
adapter's file name rather than its path (router/api/disclosure.py).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, get, post
from litestar.params import FromQuery
from litestar.response.base import ASGIResponse

from corral.http.worker_routes import LORA_ADAPTERS, SET_LORA_ADAPTERS
from router.api.disclosure import JsonRewrite, adapters_for_inference
from router.api.inference import forward_to_model
from router.security.api_keys import relay_opt
from router.security.callers import is_admin

__all__ = ["lora_routes"]


@post(SET_LORA_ADAPTERS.paths, status_code=200, opt=relay_opt(SET_LORA_ADAPTERS))
async def set_lora_adapters(
    request: Request[Any, Any, Any], model: FromQuery[str | None] = None
) -> ASGIResponse:
    return await forward_to_model(request, model, await request.body())


@get(LORA_ADAPTERS.paths, opt=relay_opt(LORA_ADAPTERS))
async def lora_adapters(
    request: Request[Any, Any, Any], model: FromQuery[str | None] = None
) -> ASGIResponse:
    hidden = None if is_admin(request.scope) else JsonRewrite(adapters_for_inference)
    return await forward_to_model(request, model, None, translation=hidden)


lora_routes = [lora_adapters, set_lora_adapters]
