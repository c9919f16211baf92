"""The one route list: every route a worker serves is in it, and the router relays each listed as
relayed, with the same management and counting marks; the rest say why they are not relayed."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.handlers import HTTPRouteHandler
from litestar.routes import HTTPRoute

from corral.http.origins import management_opt
from corral.http.worker_routes import WORKER_ROUTES, Relay, WorkerRoute
from router.app import create_app
from router.security.api_keys import ADMIN_OPT, UNCOUNTED_OPT
from router.settings import ServeSettings
from worker.app import create_worker_app

ROOT = Path(__file__).resolve().parents[3]
_SKIPPED = {"OPTIONS", "HEAD"}
Served = dict[tuple[str, str], HTTPRouteHandler]  # (method, path) → its handler


def _served(app: Litestar) -> Served:
    """(method, path) → its handler, for every HTTP route of an app."""
    served: Served = {}
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            for method, (handler, _) in route.route_handler_map.items():
                if method not in _SKIPPED:
                    served[(method, route.path)] = handler
    return served


def _listed(routes: tuple[WorkerRoute, ...]) -> set[tuple[str, str]]:
    return {(route.method, path) for route in routes for path in route.paths}


@pytest.fixture(scope="module")
def worker_served() -> Served:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIP_MODE", "PREDICTION")  # Vertex's /predict too
        patch.delenv("AIP_PREDICT_ROUTE", raising=False)
        with warnings.catch_warnings():
            # The replay route's ``Parameter(query="from")`` is Litestar's older spelling; the
            # worker's own process does not turn warnings into errors as the tests do.
            warnings.simplefilter("ignore", DeprecationWarning)
            return _served(create_worker_app())


@pytest.fixture(scope="module")
def router_served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Served:
    return _served(create_app(ServeSettings(models_dir=tmp_path_factory.mktemp("models"))))


def unaccounted(
    served: set[tuple[str, str]], routes: tuple[WorkerRoute, ...]
) -> list[tuple[str, str]]:
    """The worker's routes the list does not name: relayed by nobody, kept back for no reason."""
    return sorted(served - _listed(routes))


def test_every_route_the_worker_serves_is_listed(
    worker_served: Served,
) -> None:
    assert unaccounted(set(worker_served), WORKER_ROUTES) == []
    assert _listed(WORKER_ROUTES) == set(worker_served)  # and nothing listed it lacks
    assert len(worker_served) >= 37


def test_a_new_worker_route_not_in_the_list_fails() -> None:
    served = _listed(WORKER_ROUTES) | {("POST", "/v1/images/generations")}
    assert unaccounted(served, WORKER_ROUTES) == [("POST", "/v1/images/generations")]


def test_every_route_kept_from_the_router_says_why() -> None:
    kept = [route for route in WORKER_ROUTES if route.relay is Relay.WORKER_ONLY]
    assert kept
    assert all(len(route.how) > 20 for route in kept)
    own = [route for route in WORKER_ROUTES if route.relay is Relay.OWN]
    assert own
    # Each names the router module that relays it, and that module exists.
    assert all((ROOT / route.how.split(":")[0]).is_file() for route in own)


def test_the_worker_marks_its_management_routes(worker_served: Served) -> None:
    # A worker run alone refuses management to pages by these marks, after routing.
    for route in WORKER_ROUTES:
        for path in route.paths:
            opt = worker_served[(route.method, path)].opt or {}
            assert (opt == management_opt()) == route.admin, path


def test_the_router_serves_every_relayed_route_marked_alike(
    router_served: Served,
) -> None:
    for route in WORKER_ROUTES:
        if route.relay is Relay.WORKER_ONLY:
            continue
        for path in route.paths:
            handler = router_served.get((route.method, path))
            assert handler is not None, f"the router does not relay {route.method} {path}"
            opt = handler.opt or {}
            assert (opt.get(ADMIN_OPT) is True) == route.admin, path
            assert (opt.get(UNCOUNTED_OPT) is True) == (not route.counted), path


def test_the_router_relays_the_body_routes_with_one_handler(
    router_served: Served,
) -> None:
    body = _listed(tuple(route for route in WORKER_ROUTES if route.relay is Relay.BODY))
    assert {router_served[key].handler_name for key in body} == {"proxy_post"}
