"""Proxied routes (SPEC §3): the model comes from the JSON body (POST) or ``?model=`` (GET)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.response.base import ASGIResponse

from router.errors import ApiError, decode_body
from router.proxy import forward
from router.registry import ModelRegistry

__all__ = ["PROXIED_GET", "PROXIED_POST", "inference_routes"]

PROXIED_POST = [
    "/completion",
    "/completions",
    "/v1/completions",
    "/chat/completions",
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/responses",
    "/infill",
    "/embedding",
    "/embeddings",
    "/v1/embeddings",
    "/rerank",
    "/v1/rerank",
    "/reranking",
    "/v1/reranking",
    "/tokenize",
    "/detokenize",
    "/apply-template",
    "/lora-adapters",
]
PROXIED_GET = ["/slots", "/lora-adapters"]


class RouteKey(msgspec.Struct):
    """The only part of a body the router reads; the rest is forwarded untouched."""

    model: str | None = None


def _registry(request: Request[Any, Any, Any]) -> ModelRegistry:
    registry: ModelRegistry = request.app.state.registry
    return registry


def _model_name(name: str | None) -> str:
    if not name:
        raise ApiError(400, "model name is missing from the request")
    return name


@post(PROXIED_POST, status_code=200)
async def proxy_post(request: Request[Any, Any, Any]) -> ASGIResponse:
    body = await request.body()
    name = _model_name(decode_body(body, RouteKey).model)
    return await forward(request, _registry(request), name, body)


@get(PROXIED_GET)
async def proxy_get(request: Request[Any, Any, Any], model: str | None = None) -> ASGIResponse:
    return await forward(request, _registry(request), _model_name(model), None)


inference_routes = [proxy_post, proxy_get]
