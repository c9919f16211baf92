"""Routes that end in each kind of exception the error triage sorts (corral/http/errors.py):
an ApiError with headers, a Litestar HTTP error with headers, a bug, Litestar's validation."""

from __future__ import annotations

from litestar import get
from litestar.exceptions import HTTPException
from litestar.params import FromQuery

from corral.http.errors import ApiError

__all__ = ["RAISING_PATHS", "RAISING_ROUTES"]


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


RAISING_ROUTES = [busy, teapot, boom, typed]
RAISING_PATHS = ["/busy", "/teapot", "/boom", "/typed?count=many"]
