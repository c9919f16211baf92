"""Scoped keys and per-key limits (docs/protocol.md §8), end to end against a real router.

An ``inference`` key may use inference, streams and the model list but gets 403 on every
management route; ``concurrency=N`` and ``rpm=N`` give 429 with ``Retry-After`` beyond them.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.exceptions import LitestarDeprecationWarning
from litestar.routes import HTTPRoute

from router.app import create_app
from router.security.api_keys import ADMIN_OPT, ApiKey, KeyScope, key_id
from router.settings import ServeSettings
from tests.support.router_process import RouterProcess, running_router

ADMIN, INFERENCE = "admin-key-0001", "inference-key-0002"
ONE_AT_A_TIME, ONE_PER_MINUTE = "inference-one-at-a-time", "inference-one-per-minute"
ALL_KEYS = (ADMIN, INFERENCE, ONE_AT_A_TIME, ONE_PER_MINUTE)
KEY_FILE = f"""# a team workstation
{ADMIN} admin
{INFERENCE} inference
{ONE_AT_A_TIME} inference concurrency=1
{ONE_PER_MINUTE}   inference   rpm=1
"""
SPEC_403 = {
    "error": {
        "code": 403,
        "message": "this key may not manage models (it is an inference key)",
        "type": "permission_error",
    }
}
# Every management route, with a body that would otherwise be acted on.
MANAGEMENT: list[tuple[str, str, dict[str, Any] | None]] = [
    # A malformed id: the admin gets the route's 400 and no download is left in the listing.
    ("POST", "/models", {"model": "not a repo"}),
    ("DELETE", "/models?model=alpha", None),
    ("POST", "/models/load", {"model": "alpha"}),
    ("POST", "/models/unload", {"model": "alpha"}),
    ("GET", "/models?reload=1", None),
    ("GET", "/v1/models?reload=yes", None),
    ("POST", "/slots/0?action=erase&model=alpha", None),
    ("POST", "/lora-adapters?model=alpha", None),
    ("POST", "/api/pull", {"model": "not a repo"}),
    ("DELETE", "/api/delete", {"model": "nobody"}),
    ("POST", "/api/copy", {"source": "alpha", "destination": "alpha-copy"}),
]
# What the route table must mark as management: a new route has to be put on one side.
EXPECTED_ADMIN = {
    ("POST", "/models"): True,
    ("DELETE", "/models"): True,
    ("POST", "/models/load"): True,
    ("POST", "/models/unload"): True,
    ("GET", "/models"): "reload",
    ("GET", "/v1/models"): "reload",
    ("POST", "/slots/{id_slot:str}"): True,
    ("POST", "/lora-adapters"): True,
    ("POST", "/api/pull"): True,
    ("DELETE", "/api/delete"): True,
    ("POST", "/api/copy"): True,
    # It reaches the workers' and the machine's own services (docs/security.md).
    ("GET", "/cors-proxy"): True,
    ("POST", "/cors-proxy"): True,
}


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    keys = tmp_path_factory.mktemp("team") / "keys.txt"
    keys.write_text(KEY_FILE)
    args = ["--models-dir", str(models_dir), "--ctx-size", "256"]
    with running_router([*args, "--api-key-file", str(keys)]) as router:
        yield router


def test_every_management_route_is_marked(models_dir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LitestarDeprecationWarning)
        app = create_app(ServeSettings(models_dir=models_dir, api_keys=(ApiKey("unused"),)))
    marked: dict[tuple[str, str], object] = {}
    for route in app.routes:
        assert isinstance(route, HTTPRoute)
        for handler in route.route_handlers:
            if ADMIN_OPT in handler.opt:
                for method in handler.http_methods:
                    marked[(method, route.path)] = handler.opt[ADMIN_OPT]
    assert marked == EXPECTED_ADMIN


@pytest.mark.parametrize(("method", "path", "body"), MANAGEMENT)
@pytest.mark.parametrize("key", [ADMIN, INFERENCE])
def test_inference_keys_may_not_manage_models(
    team: RouterProcess, key: str, method: str, path: str, body: dict[str, Any] | None
) -> None:
    response = team.client.request(method, path, json=body, headers=_auth(key))
    if key == INFERENCE:
        assert (response.status_code, response.json()) == (403, SPEC_403)
    else:
        # The admin gets the route's own answer, whatever it is.
        assert response.status_code not in (401, 403), response.text


def test_inference_keys_use_inference_streams_and_the_list(team: RouterProcess) -> None:
    client, headers = team.client, _auth(INFERENCE)
    listed = client.get("/v1/models", headers=headers)
    assert listed.status_code == 200
    assert {entry["id"] for entry in listed.json()["data"]} == {"alpha", "beta"}
    assert client.get("/models?reload=", headers=headers).status_code == 200  # empty: no reload
    tokens = client.post("/tokenize", json={"model": "alpha", "content": "hi"}, headers=headers)
    assert tokens.status_code == 200, tokens.text
    lookup = client.post("/v1/streams/lookup", json={"conversation_ids": ["c1"]}, headers=headers)
    assert (lookup.status_code, lookup.json()) == (200, [])
    replay = client.get("/v1/stream?conv_id=c1", headers=headers)
    assert replay.status_code == 404  # not a 403: streams are inference


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (ADMIN, {"scope": "admin", "concurrency": None, "rpm": None}),
        (INFERENCE, {"scope": "inference", "concurrency": None, "rpm": None}),
        (ONE_AT_A_TIME, {"scope": "inference", "concurrency": 1, "rpm": None}),
    ],
)
def test_the_key_route_tells_the_scope_and_never_the_key(
    team: RouterProcess, key: str, expected: dict[str, Any]
) -> None:
    answer = team.client.get("/v1/key", headers=_auth(key))
    assert answer.json() == {**expected, "key_id": key_id(key), "tools": False}
    assert key not in answer.text
    assert team.client.get("/v1/key").status_code == 401


def test_a_key_with_concurrency_1_is_refused_while_its_stream_is_open(
    team: RouterProcess,
) -> None:
    headers = _auth(ONE_AT_A_TIME)
    with team.client.stream("GET", "/models/sse", headers=headers) as events:
        assert events.status_code == 200
        # Kept in a variable: a dropped iterator is closed, and the stream with it.
        chunks = events.iter_bytes()
        assert next(chunks) == b": connected\n\n"  # the stream is open and counted
        refused = team.client.get("/v1/models", headers=headers)
        assert refused.status_code == 429
        assert refused.json()["error"] == {
            "code": 429,
            "message": "too many requests in flight for this key (at most 1)",
            "type": "rate_limit_error",
        }
        assert refused.headers["retry-after"] == "1"
        # Other keys are not held back by this one's limit.
        assert team.client.get("/v1/models", headers=_auth(INFERENCE)).status_code == 200
        del chunks


def test_a_key_with_rpm_1_gets_one_request_then_429(team: RouterProcess) -> None:
    headers = _auth(ONE_PER_MINUTE)
    assert team.client.get("/v1/models", headers=headers).status_code == 200
    refused = team.client.get("/v1/models", headers=headers)
    assert refused.status_code == 429
    assert refused.json()["error"]["message"] == "rate limit reached for this key"
    # A token comes back a minute after the first was taken: less than that is left.
    assert 1 <= int(refused.headers["retry-after"]) <= 60


def test_keys_never_reach_the_log_but_their_hashes_do(team: RouterProcess) -> None:
    team.client.post("/models/load", json={"model": "alpha"}, headers=_auth(INFERENCE))
    # Waited for with its path: the 403s of the other tests are logged the same way.
    team.wait_for_log("refused: the key's scope", key=key_id(INFERENCE), path="/models/load")
    text = team.log_text()
    for key in ALL_KEYS:
        assert key not in text


def test_a_key_file_in_todays_format_is_all_admin(models_dir: Path, tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("# one key per line\nold-style-key\n")
    args = ["--models-dir", str(models_dir), "--offline", "--api-key-file", str(keys)]
    with running_router(args) as router:
        answer = router.client.get("/models?reload=1", headers=_auth("old-style-key"))
        assert answer.status_code == 200
        assert (
            json.loads(router.client.get("/v1/key", headers=_auth("old-style-key")).text)["scope"]
            == KeyScope.ADMIN.value
        )


def test_a_router_without_keys_tells_everyone_they_are_admin(models_dir: Path) -> None:
    with running_router(["--models-dir", str(models_dir)]) as router:
        assert router.client.get("/v1/key").json() == {
            "scope": "admin",
            "key_id": None,
            "concurrency": None,
            "rpm": None,
            "tools": False,  # the router's tools are off by default
        }
        assert httpx.codes.is_success(router.client.get("/models?reload=1").status_code)
