"""``POST /lora-adapters``: a model's global LoRA scales, set through the router.

The body is llama-server's array of ``{id, scale}``, which has no room for ``model``, so the
model comes from ``?model=`` as on the per-model GET routes (in single-model mode the one model).
The scales hold for every client of that model, so only an admin key may set them; an inference
key chooses scales for its own requests with the ``lora`` field (docs/api.md).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, post
from litestar.params import FromQuery
from litestar.response.base import ASGIResponse

from router.api.inference import forward_to_model
from router.security.api_keys import admin_only

__all__ = ["lora_routes"]


@post("/lora-adapters", status_code=200, opt=admin_only())
async def set_lora_adapters(
    request: Request[Any, Any, Any], model: FromQuery[str | None] = None
) -> ASGIResponse:
    return await forward_to_model(request, model, await request.body())


lora_routes = [set_lora_adapters]
