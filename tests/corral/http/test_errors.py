"""The error JSON's HTTP answer: status, envelope, and the headers an error asks for."""

from __future__ import annotations

from litestar import Litestar, get
from litestar.testing import TestClient

from corral.http.errors import ApiError, exception_handlers


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
