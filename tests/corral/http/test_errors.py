"""The error JSON's HTTP answer: status, envelope, and the headers an error asks for."""

from __future__ import annotations

from litestar import Litestar, get
from litestar.testing import TestClient

from corral.http.errors import ApiError, exception_handlers
from tests.support.fakes.raising_routes import RAISING_ROUTES


@get("/full")
async def full() -> None:
    raise ApiError(503, "try later", headers={"Retry-After": "1"})


@get("/plain")
async def plain() -> None:
    raise ApiError(503, "unavailable")


def test_an_error_s_headers_reach_the_client_with_its_envelope() -> None:
    app = Litestar([full, plain], exception_handlers=exception_handlers)
    with TestClient(app) as client:
        response = client.get("/full")
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        assert response.json() == {
            "error": {"code": 503, "message": "try later", "type": "unavailable_error"}
        }
        assert "retry-after" not in client.get("/plain").headers


def test_the_triage_gives_each_exception_its_status_message_and_headers() -> None:
    app = Litestar(RAISING_ROUTES, exception_handlers=exception_handlers)
    with TestClient(app) as client:
        response = client.get("/teapot")
        assert (response.status_code, response.headers["x-spout"]) == (418, "1")
        assert response.json()["error"]["message"] == "short and stout"
        response = client.get("/boom")  # the traceback goes to the log, never to the client
        assert response.status_code == 500
        assert response.json()["error"] == {
            "code": 500,
            "message": "internal server error",
            "type": "server_error",
        }
        response = client.get("/typed?count=many")  # Litestar's own validation: its messages
        assert response.status_code == 400
        assert response.json()["error"]["message"] == "Expected `int`, got `str`"
