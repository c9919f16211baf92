"""Ollama's error shape over the core's triage: the same status, message and headers as the
error JSON of every other route, spelled ``{"error": "…"}``."""

from __future__ import annotations

import pytest
from litestar import Litestar, Router
from litestar.testing import TestClient

from corral.http.errors import exception_handlers
from router.api.ollama.errors import ollama_exception_handlers
from tests.support.fakes.raising_routes import RAISING_PATHS, RAISING_ROUTES


@pytest.mark.parametrize("path", RAISING_PATHS)
def test_ollama_answers_what_the_core_answers_in_its_own_shape(path: str) -> None:
    ollama = Router(
        "/api", route_handlers=RAISING_ROUTES, exception_handlers=ollama_exception_handlers
    )
    app = Litestar([*RAISING_ROUTES, ollama], exception_handlers=exception_handlers)
    with TestClient(app) as client:
        core, shaped = client.get(path), client.get(f"/api{path}")
    assert shaped.status_code == core.status_code
    assert shaped.json() == {"error": core.json()["error"]["message"]}
    for header in ("retry-after", "x-spout"):
        assert shaped.headers.get(header) == core.headers.get(header)
