"""A worker run alone as llama-server: ``--api-key``, CORS, the Origin and Host checks
(worker/host/access.py), for real."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.worker_process import WorkerProcess, worker

PREFLIGHT = {
    "Origin": "http://web.mydomain.fr",
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "Authorization",
}
PROMPT = {"prompt": "Once", "n_predict": 1}


@pytest.fixture(scope="module")
def keyed(models_dir: Path) -> Iterator[WorkerProcess]:
    with worker(models_dir / "alpha.gguf", "--api-key", "k1, k2") as child:
        yield child


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer nope"}, {"X-Api-Key": "k1x"}, {"Authorization": ""}]
)
def test_a_request_without_a_valid_key_is_401(
    keyed: WorkerProcess, headers: dict[str, str]
) -> None:
    for path in ("/completions", "/no/such/route"):
        response = httpx.post(f"{keyed.url}{path}", json=PROMPT, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"] == {
            "code": 401,
            "message": "Invalid API Key",
            "type": "authentication_error",
        }


@pytest.mark.parametrize(
    "headers", [{"Authorization": "Bearer k2"}, {"Authorization": "k1"}, {"X-Api-Key": "k1"}]
)
def test_any_of_the_keys_in_either_header_is_let_in(
    keyed: WorkerProcess, headers: dict[str, str]
) -> None:
    response = httpx.post(f"{keyed.url}/completions", json=PROMPT, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    assert "content" in response.json()


def test_health_and_preflights_need_no_key(keyed: WorkerProcess) -> None:
    assert httpx.get(f"{keyed.url}/health").status_code == 200
    assert httpx.get(f"{keyed.url}/v1/health").status_code == 200
    preflight = httpx.options(f"{keyed.url}/completions", headers=PREFLIGHT)
    # As llama-server's default --cors-origins "*": the page's own origin, answered 200.
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "http://web.mydomain.fr"
    assert preflight.headers["access-control-allow-methods"] == "GET, POST, DELETE, OPTIONS"
    refused = httpx.get(f"{keyed.url}/props", headers={"Origin": "http://web.mydomain.fr"})
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == "http://web.mydomain.fr"


def test_a_routers_worker_answers_only_requests_with_its_key(models_dir: Path) -> None:
    # docs/protocol.md §8: the router's key, in the environment it starts the worker with, is
    # asked of every request, /health and preflights included; any local process can reach
    # the port, only the router knows the key.
    env = {"CORRAL_WORKER_KEY": "the-routers-key"}
    with worker(models_dir / "alpha.gguf", "--cors-origins", "none", env=env) as child:
        for headers in (
            {},
            {"X-Corral-Worker-Key": "the-routers-key-but-longer"},
            {"X-Corral-Worker-Key": ""},
            {"Authorization": "Bearer the-routers-key"},
            {"X-Api-Key": "the-routers-key"},
        ):
            for method, path in (
                ("POST", "/completions"),
                ("POST", "/slots/0?action=erase"),
                ("GET", "/health"),
                ("GET", "/no/such/route"),
                ("OPTIONS", "/completions"),
            ):
                answer = httpx.request(
                    method, f"{child.url}{path}", json=PROMPT, headers={**PREFLIGHT, **headers}
                )
                assert answer.status_code == 401, (method, path, headers)
                assert answer.json()["error"]["type"] == "authentication_error"
        keyed = {"X-Corral-Worker-Key": "the-routers-key"}
        assert httpx.get(f"{child.url}/health", headers=keyed).status_code == 200
        answer = httpx.post(f"{child.url}/completions", json=PROMPT, headers=keyed, timeout=60)
        assert answer.status_code == 200, answer.text


def test_the_routers_workers_answer_no_page(models_dir: Path) -> None:
    # The router passes --cors-origins none: a keyless loopback worker no browser may read, nor
    # make act (the router sends no Origin; a request with one comes from a page).
    with worker(models_dir / "alpha.gguf", "--cors-origins", "none") as child:
        preflight = httpx.options(f"{child.url}/completions", headers=PREFLIGHT)
        props = httpx.get(f"{child.url}/props", headers={"Origin": "http://web.mydomain.fr"})
        simple = httpx.post(
            f"{child.url}/slots/0?action=erase",
            content=b"{}",
            headers={"Origin": "http://web.mydomain.fr", "Content-Type": "text/plain"},
        )
        assert httpx.get(f"{child.url}/props").status_code == 200
    assert "access-control-allow-origin" not in preflight.headers
    assert "access-control-allow-origin" not in props.headers
    assert (props.status_code, simple.status_code) == (403, 403)


@pytest.fixture(scope="module")
def slot_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("slots")


@pytest.fixture(scope="module")
def keyless(models_dir: Path, slot_files: Path) -> Iterator[WorkerProcess]:
    """As llama-server's default: no key, --cors-origins *; slot files on."""
    with worker(models_dir / "alpha.gguf", "--slot-save-path", str(slot_files)) as child:
        yield child


def _from_page(url: str, origin: str, body: bytes = b"{}") -> httpx.Response:
    """A page's simple fetch(): no preflight."""
    headers = {"Origin": origin, "Content-Type": "text/plain"}
    return httpx.post(url, content=body, headers=headers, timeout=60)


def test_star_lets_any_page_run_inference_but_not_manage(
    keyless: WorkerProcess, slot_files: Path
) -> None:
    evil = "https://evil.example"
    answer = _from_page(f"{keyless.url}/completions", evil, b'{"prompt": "Once", "n_predict": 1}')
    assert answer.status_code == 200, answer.text
    assert answer.headers["access-control-allow-origin"] == evil
    for path in ("/slots/0?action=save", "/slots/0?action=erase", "/lora-adapters"):
        refused = _from_page(f"{keyless.url}{path}", evil, b'{"filename": "x.bin"}')
        assert refused.status_code == 403, path
        assert refused.json()["error"]["type"] == "permission_error"
        assert refused.headers["access-control-allow-origin"] == evil  # it may read why
    assert list(slot_files.iterdir()) == []
    # Its own Web UI may: an Origin equal to the worker's own.
    own = _from_page(f"{keyless.url}/slots/0?action=save", keyless.url, b'{"filename": "x.bin"}')
    assert own.status_code == 200, own.text
    assert (slot_files / "x.bin").is_file()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("//slots/0?action=save", b'{"filename": "p"}'),
        ("/%2Fslots/0?action=save", b'{"filename": "p"}'),
        ("//lora-adapters", b"[]"),
    ],
)
def test_a_spelling_of_a_management_path_is_still_management(
    keyless: WorkerProcess, slot_files: Path, path: str, body: bytes
) -> None:
    # Litestar routes ``//slots/0`` and ``/%2Fslots/0`` to the slot handler: management is the
    # route's mark, read after routing, not how the path starts.
    refused = _from_page(f"{keyless.url}{path}", "https://attacker.example", body)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["type"] == "permission_error"
    assert not (slot_files / "p").exists()
    # The same request without a page's Origin is as it was.
    plain = httpx.post(f"{keyless.url}{path}", content=body, timeout=60)
    assert plain.status_code == 200, plain.text
    if "slots" in path:
        (slot_files / "p").unlink()  # it was written


def test_a_rebinding_name_gets_403(keyless: WorkerProcess) -> None:
    port = httpx.URL(keyless.url).port
    refused = httpx.get(f"{keyless.url}/props", headers={"Host": f"evil.example:{port}"})
    assert refused.status_code == 403
    assert httpx.get(f"{keyless.url}/props", headers={"Host": f"localhost:{port}"}).is_success


def test_allowed_hosts_adds_names(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf", "--allowed-hosts", "llm.example") as child:
        assert httpx.get(f"{child.url}/props", headers={"Host": "llm.example"}).is_success
        assert httpx.get(f"{child.url}/props", headers={"Host": "evil.example"}).status_code == 403
