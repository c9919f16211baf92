"""``POST /predict`` (``AIP_PREDICT_ROUTE``) when ``AIP_MODE=PREDICTION``, as llama-server.

Vertex AI's custom containers send ``{"instances": [...]}``; each instance names a route by
``@requestFormat``, either its camelCase alias (``chatCompletions`` for
``/v1/chat/completions``) or the path itself, and the answer is ``{"predictions": [...]}``, one
per instance, in order: the route's JSON answer, or ``{"error": ...}`` for that instance alone.
Instances run side by side through this worker's own routes, never streamed.
(``server-http.cpp``, ``register_gcp_compat``.)
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import Litestar, post

from corral.http.errors import ApiError
from corral.http.worker_routes import PREDICT
from worker.state import AnyRequest

if TYPE_CHECKING:
    import httpx

__all__ = ["predict_route", "request_format"]

_MAX_INSTANCES = 128


def request_format(path: str) -> str:
    """A route's camelCase alias: ``/v1/chat/completions`` → ``chatCompletions``."""
    words = [w for w in re.split(r"[/_-]", path.removeprefix("/v1")) if w]
    return "".join(w if i == 0 else w[:1].upper() + w[1:] for i, w in enumerate(words))


def _routes(app: Litestar) -> dict[str, str]:
    """Every POST route by alias and by path; the first of an alias wins, as upstream."""
    paths = [r.path for r in app.routes if "POST" in getattr(r, "methods", ())]
    table: dict[str, str] = {}
    for path in paths:
        table.setdefault(request_format(path), path)
    table.update((path, path) for path in paths)
    return table


def _error(message: str, status: int = 400) -> dict[str, Any]:
    return msgspec.to_builtins(ApiError(status, message).envelope())  # type: ignore[no-any-return]


async def _one(client: httpx.AsyncClient, routes: Mapping[str, str], instance: Any) -> Any:
    if not isinstance(instance, dict):
        return _error("each instance must be a JSON object")
    payload = dict(instance)
    wanted = payload.pop("@requestFormat", None)
    if not isinstance(wanted, str):
        return _error("each instance must include a string @requestFormat")
    if wanted not in routes:
        return _error(f"no handler registered for @requestFormat: {wanted}")
    payload["stream"] = False  # predictions are whole answers
    response = await client.post(routes[wanted], json=payload)
    try:
        return response.json()
    except ValueError:
        return response.text


def predict_route(environ: Mapping[str, str] = os.environ) -> list[Any]:
    """The route when Vertex AI asks for it (``AIP_MODE=PREDICTION``), else none."""
    if environ.get("AIP_MODE") != "PREDICTION":
        return []

    @post(environ.get("AIP_PREDICT_ROUTE") or PREDICT.paths, status_code=200)
    async def predict(request: AnyRequest) -> dict[str, Any]:
        try:
            body = msgspec.json.decode(await request.body())
        except msgspec.DecodeError as exc:
            raise ApiError(400, str(exc)) from None
        instances = body.get("instances") if isinstance(body, dict) else None
        if not isinstance(instances, list):
            raise ApiError(400, "request body must include an array field named instances")
        if len(instances) > _MAX_INSTANCES:
            raise ApiError(400, f"instances array exceeds maximum size of {_MAX_INSTANCES}")
        import httpx  # lazily: 2 MiB of a worker's memory for a rare route (docs/benchmarks.md)

        routes = _routes(request.app)
        transport = httpx.ASGITransport(app=request.app)  # type: ignore[arg-type]  # ASGI typing
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as client:
            predictions = await asyncio.gather(*(_one(client, routes, i) for i in instances))
        return {"predictions": list(predictions)}

    return [predict]
