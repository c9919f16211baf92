"""Ollama's error shape over the core's triage: the same status, message and headers as the
error JSON of every other route, spelled ``{"error": "…"}``."""

from __future__ import annotations

import pytest
from litestar import Litestar, Router, get
from litestar.exceptions import HTTPException
from litestar.params import FromQuery
from litestar.testing import TestClient

from corral.http.errors import ApiError, exception_handlers
from router.api.ollama.errors import ollama_exception_handlers


@get("/busy")
async def busy() -> None:
    raise ApiError(503, "try later", headers={"Retry-After": "1"})


@get("/teapot")
async def teapot() -> None:
    raise HTTPException(status_code=418, detail="short and stout", headers={"X-Spout": "1"})


@get("/boom")
async def boom() -> None:
    raise RuntimeError("a secret path /home/user/model.gguf")


@get("/typed")
async def typed(count: FromQuery[int]) -> int:
    return count


HANDLERS = [busy, teapot, boom, typed]


@pytest.mark.parametrize("path", ["/busy", "/teapot", "/boom", "/typed?count=many"])
def test_ollama_answers_what_the_core_answers_in_its_own_shape(path: str) -> None:
    ollama = Router("/api", route_handlers=HANDLERS, exception_handlers=ollama_exception_handlers)
    app = Litestar([*HANDLERS, ollama], exception_handlers=exception_handlers)
    with TestClient(app) as client:
        core, shaped = client.get(path), client.get(f"/api{path}")
    assert shaped.status_code == core.status_code
    assert shaped.json() == {"error": core.json()["error"]["message"]}
    for header in ("retry-after", "x-spout"):
        assert shaped.headers.get(header) == core.headers.get(header)
