"""Leases on models end with their request, whatever ends it (router/scheduling/leases.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar, Request, get
from litestar.testing import AsyncTestClient

from corral.http.errors import ApiError, exception_handlers
from router.scheduling.leases import release_all, release_leases
from tests.support.chat_streams import active_requests, long_answer, until
from tests.support.router_process import running_router
from tests.support.scheduling_harness import harness


@pytest.mark.anyio
async def test_a_lease_is_given_back_once_however_often_it_is_released() -> None:
    async with harness(models_max=1) as h:
        a = await h.load("a")
        request: dict[str, Any] = {}
        first, second = h.scheduler.hold(a, request), h.scheduler.hold(a, request)
        assert first is not None
        assert second is not None
        assert a.in_flight == 2
        first.release()
        first.release()
        assert a.in_flight == 1
        release_all(request)  # the request ended: the rest goes back, nothing twice
        release_all(request)
        assert a.in_flight == 0
        assert first.released
        assert second.released


@pytest.mark.anyio
async def test_nothing_is_held_on_a_model_that_does_not_serve() -> None:
    async with harness(models_max=1) as h:
        request: dict[str, Any] = {}
        assert h.scheduler.hold(h.state("a"), request) is None
        assert request == {}  # nothing bound, nothing to give back


@pytest.mark.anyio
async def test_a_handler_that_fails_after_taking_a_lease_gives_it_back() -> None:
    # The handler never releases: the middleware does, when the request's ASGI call returns.
    async with harness(models_max=1) as h:
        a = await h.load("a")
        seen: list[int] = []

        @get("/fails")
        async def fails(request: Request[Any, Any, Any]) -> None:
            assert h.scheduler.acquire_if_ready("a", request.scope) is not None
            seen.append(a.in_flight)
            raise ApiError(503, "the worker went away")

        app = Litestar([fails], middleware=[release_leases], exception_handlers=exception_handlers)
        async with AsyncTestClient(app) as client:
            response = await client.get("/fails")
        assert response.status_code == 503
        assert seen == [1]
        assert a.in_flight == 0


def test_a_client_that_leaves_mid_stream_gives_its_claim_back(models_dir: Path) -> None:
    # A context of 32k: the answer is still being generated when the client leaves.
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "32768"]) as router:
        with long_answer(router, "alpha"):
            assert active_requests(router, "alpha") == 1
        # The connection closed mid-answer: the relay ends, and with its request the lease.
        until(
            lambda: active_requests(router, "alpha") == 0, "the cancelled stream's claim to go back"
        )
        assert router.client.post("/models/unload", json={"model": "alpha"}).status_code == 200
