"""docs/protocol.md §8 end to end: API keys, CORS, the exposure warning, and workers that never
see a key.

Most checks run against real router processes; the in-process app is only used to enumerate the
route table, so a route added later is covered without anyone touching this file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from litestar.exceptions import LitestarDeprecationWarning
from litestar.routes import HTTPRoute
from structlog.testing import capture_logs

from router.app import create_app
from router.cli.main import parse_serve_args
from router.security.api_keys import ApiKey, KeyScope
from router.security.guard import is_loopback_host, is_public_path, warn_if_exposed
from router.settings import ServeSettings
from tests.support.router_process import RouterProcess, running_router

SPEC_401 = {"error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}}
KEYS = ("key-one", "key-two", "file-key-3")
ENV_KEY, ENV_FILE_KEY = "env-key-a", "env-file-key-b"
AUTH = {"Authorization": f"Bearer {KEYS[0]}"}
EXPECTED_PUBLIC = {
    ("GET", "/"),
    ("GET", "/health"),
    ("GET", "/v1/health"),
    ("GET", "/assets/dummy"),  # the Web UI's files
}
LOOPBACK_ORIGINS = [
    "http://localhost",
    "http://localhost:5173",
    "https://localhost:8443",
    "http://127.0.0.1:8080",
    "http://[::1]:3000",
]
FOREIGN_ORIGINS = [
    "https://example.com",
    "http://localhost.evil.example",
    "http://127.0.0.1.nip.io",
    "http://evil.example/http://localhost",
    "null",
]
KEY_FILE_TEXT = f"""# keys for the tests; this line is a comment
{KEYS[2]}

  # an indented comment
"""


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "keys.txt"
    path.write_text(KEY_FILE_TEXT)
    return path


@pytest.fixture(scope="module")
def secured(models_dir: Path, key_file: Path) -> Iterator[RouterProcess]:
    """Two keys from --api-key, one from --api-key-file, CORS for loopback pages only."""
    args = ["--models-dir", str(models_dir), "--api-key", f"{KEYS[0]},{KEYS[1]}"]
    args += ["--api-key-file", str(key_file), "--cors-origins", "localhost"]
    with running_router(args) as process:
        yield process


@pytest.fixture(scope="module")
def open_router(models_dir: Path) -> Iterator[RouterProcess]:
    """No key and the default CORS policy (any origin, no credentials)."""
    with running_router(["--models-dir", str(models_dir)]) as process:
        yield process


def _route_table(models_dir: Path) -> list[tuple[str, str]]:
    with warnings.catch_warnings():
        # Litestar's deprecation notices about handler signatures are not this test's subject.
        warnings.simplefilter("ignore", LitestarDeprecationWarning)
        app = create_app(ServeSettings(models_dir=models_dir, api_keys=(ApiKey("unused"),)))
    pairs: list[tuple[str, str]] = []
    for route in app.routes:
        assert isinstance(route, HTTPRoute), f"not an HTTP route, check its auth: {route.path}"
        path = re.sub(r"\{[^}]*\}", "dummy", route.path)
        pairs += [(method, path) for method in sorted(route.methods) if method != "OPTIONS"]
    return pairs


def _status_and_body(
    client: httpx.Client, method: str, path: str, headers: dict[str, str]
) -> tuple[int, bytes]:
    # Streamed, and the body read only for 401s: an authorised GET /models/sse never ends.
    with client.stream(method, path, headers=headers, timeout=30) as response:
        return response.status_code, response.read() if response.status_code == 401 else b""


def test_every_route_but_the_public_ones_needs_a_key(
    secured: RouterProcess, models_dir: Path
) -> None:
    table = _route_table(models_dir)
    public = {(method, path) for method, path in table if is_public_path(path)}
    assert public == EXPECTED_PUBLIC, "the public list changed: intended (docs/protocol.md §8)?"
    assert len(table) > 20
    for method, path in table:
        status, body = _status_and_body(secured.client, method, path, {})
        if (method, path) in public:
            assert status != 401, (method, path)
            continue
        assert status == 401, (method, path, status)
        assert json.loads(body) == SPEC_401, (method, path)
        # No model is loaded or even named: the key check comes before everything else.
        status, _ = _status_and_body(secured.client, method, path, AUTH)
        assert status != 401, (method, path)
    models = secured.client.get("/models", headers=AUTH).json()["data"]
    assert {entry["status"]["value"] for entry in models} == {"unloaded"}


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("Authorization", f"Bearer {KEYS[0]}"),
        ("Authorization", f"bearer {KEYS[1]}"),
        ("Authorization", f"Bearer {KEYS[2]}"),  # from --api-key-file
        ("Authorization", KEYS[0]),  # no scheme, as llama-server accepts
        ("X-Api-Key", KEYS[0]),
        ("x-api-key", KEYS[2]),
    ],
)
def test_valid_keys_are_accepted(secured: RouterProcess, header: str, value: str) -> None:
    response = secured.client.get("/v1/models", headers={header: value})
    assert response.status_code == 200
    assert {entry["id"] for entry in response.json()["data"]} == {"alpha", "beta"}


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("Authorization", "Bearer wrong"),
        ("Authorization", "Bearer"),
        ("Authorization", f"Bearer {KEYS[0]}x"),
        ("Authorization", f"Bearer {KEYS[0][:-1]}"),
        ("Authorization", f"Bearer {KEYS[0]},{KEYS[1]}"),
        ("Authorization", f"Basic {KEYS[0]}"),
        ("Authorization", "Bearer # keys for the tests; this line is a comment"),
        ("X-Api-Key", "# an indented comment"),
        ("X-Api-Key", "wrong"),
        ("X-Api-Key", ""),
        ("X-Api-Key", KEYS[0].upper()),
    ],
)
def test_invalid_keys_are_rejected(secured: RouterProcess, header: str, value: str) -> None:
    response = secured.client.get("/v1/models", headers={header: value})
    assert response.status_code == 401
    assert response.json() == SPEC_401
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("path", ["/health", "/v1/health", "/"])
def test_health_and_web_ui_need_no_key(secured: RouterProcess, path: str) -> None:
    assert secured.client.get(path).status_code == 200


def test_unknown_routes_are_401_without_a_key_and_404_with_one(secured: RouterProcess) -> None:
    # 401 first, so that callers without a key cannot map which routes exist.
    for path in ["/no/such/route", "/v1/nope", "/health/extra"]:
        response = secured.client.get(path)
        assert (response.status_code, response.json()) == (401, SPEC_401), path
        response = secured.client.get(path, headers=AUTH)
        assert response.status_code == 404, path
        assert response.json()["error"]["type"] == "not_found_error"


def test_wrong_method_on_a_public_path_is_401_then_405(secured: RouterProcess) -> None:
    assert secured.client.delete("/health").json() == SPEC_401
    assert secured.client.post("/", headers=AUTH).status_code == 405


@pytest.mark.parametrize("origin", LOOPBACK_ORIGINS)
def test_preflight_from_loopback_pages_needs_no_key(secured: RouterProcess, origin: str) -> None:
    response = secured.client.options(
        "/v1/chat/completions",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": (
                "authorization, content-type, x-conversation-id, x-stainless-os"
            ),
        },
    )
    assert response.status_code in (200, 204)
    assert response.headers["access-control-allow-origin"] == origin
    methods = {m.strip() for m in response.headers["access-control-allow-methods"].split(",")}
    assert methods == {"GET", "POST", "DELETE", "OPTIONS"}
    allowed = {
        h.strip().lower() for h in response.headers["access-control-allow-headers"].split(",")
    }
    assert {"authorization", "content-type", "x-conversation-id", "x-stainless-os"} <= allowed
    assert "access-control-allow-credentials" not in response.headers


@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
def test_other_origins_get_no_cors_headers(secured: RouterProcess, origin: str) -> None:
    preflight = secured.client.options(
        "/v1/models", headers={"Origin": origin, "Access-Control-Request-Method": "GET"}
    )
    assert "access-control-allow-origin" not in preflight.headers
    # Refused outright, key or not (router/security/origins.py), and unreadable to the page.
    response = secured.client.get("/v1/models", headers={"Origin": origin, **AUTH})
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers


def test_a_401_carries_cors_headers_so_the_page_can_read_it(secured: RouterProcess) -> None:
    origin = LOOPBACK_ORIGINS[1]
    response = secured.client.post("/v1/chat/completions", headers={"Origin": origin})
    assert response.status_code == 401
    assert response.headers["access-control-allow-origin"] == origin
    response = secured.client.get("/no/such/route", headers={"Origin": origin})
    assert response.status_code == 401
    assert response.headers["access-control-allow-origin"] == origin


def test_without_a_key_everything_is_open(open_router: RouterProcess) -> None:
    assert open_router.client.get("/v1/models").status_code == 200
    assert open_router.client.get("/no/such/route").status_code == 404


def test_default_cors_allows_any_origin_without_credentials(
    open_router: RouterProcess, secured: RouterProcess
) -> None:
    origin = "https://some.page.example"
    preflight = open_router.client.options(
        "/v1/chat/completions",
        headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
    )
    assert preflight.headers["access-control-allow-origin"] == origin  # llama-server's echo
    assert preflight.headers["vary"] == "Origin"  # so no cache hands it to another page
    simple = open_router.client.get("/v1/models", headers={"Origin": origin})
    assert simple.headers["access-control-allow-origin"] == origin
    with_cookie = open_router.client.get("/health", headers={"Origin": origin, "Cookie": "a=b"})
    loopback = secured.client.get("/health", headers={"Origin": LOOPBACK_ORIGINS[0]})
    for response in (preflight, simple, with_cookie, loopback):
        # Credentials are never allowed: echoing the origin grants no more than "*" would.
        assert "access-control-allow-credentials" not in response.headers


def test_workers_never_receive_a_key(models_dir: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "env-keys.txt"
    key_file.write_text(f"# from LLAMA_ARG_API_KEY_FILE\n{ENV_FILE_KEY}\n")
    env = {"LLAMA_API_KEY": ENV_KEY, "LLAMA_ARG_API_KEY_FILE": str(key_file)}
    with running_router(["--models-dir", str(models_dir), "--ctx-size", "256"], env) as router:
        # Both keys come from the environment alone.
        assert router.client.get("/v1/models", headers={"X-Api-Key": ENV_FILE_KEY}).is_success
        reply = router.client.post(
            "/tokenize",
            json={"model": "alpha", "content": "hello"},
            headers={"Authorization": f"Bearer {ENV_KEY}"},
        )
        assert reply.status_code == 200, reply.text
        workers = [
            child
            for child in psutil.Process(router.process.pid).children(recursive=True)
            if "worker" in child.cmdline()
        ]
        assert len(workers) == 1
        secrets = (ENV_KEY, ENV_FILE_KEY, str(key_file))
        for worker in workers:
            environ, argv = worker.environ(), " ".join(worker.cmdline())
            assert not {"LLAMA_API_KEY", "LLAMA_ARG_API_KEY_FILE"} & set(environ)
            for secret in secrets:
                assert secret not in argv
                assert not any(secret in value for value in environ.values())


def _secrets(settings: ServeSettings) -> tuple[str, ...]:
    return tuple(key.secret for key in settings.api_keys)


def test_cli_combines_flags_files_and_environment(
    key_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = parse_serve_args(
        ["--api-key", "sk-a, sk-b", "--api-key", "sk-c,sk-a", "--api-key-file", str(key_file)]
    )
    assert _secrets(settings) == ("sk-a", "sk-b", "sk-c", KEYS[2])
    assert {key.scope for key in settings.api_keys} == {KeyScope.ADMIN}  # today's format: admin
    assert settings.cors_origins == ("*",)
    # Kept out of logs, the keys' own reprs included.
    assert not any(key.secret in repr(settings) for key in settings.api_keys)
    assert not any(key.secret in repr(key) for key in settings.api_keys)

    other = tmp_path / "more.txt"
    other.write_text("z\n")
    monkeypatch.setenv("LLAMA_API_KEY", "from-env")
    monkeypatch.setenv("LLAMA_ARG_API_KEY_FILE", str(other))
    monkeypatch.setenv("LLAMA_ARG_CORS_ORIGINS", "localhost, https://app.example")
    from_env = parse_serve_args([])
    assert _secrets(from_env) == ("from-env", "z")
    assert from_env.cors_origins == ("localhost", "https://app.example")
    # A flag replaces its variable; the other flag's variable still counts.
    assert _secrets(parse_serve_args(["--api-key", "flag"])) == ("flag", "z")


@pytest.mark.parametrize("problem", ["missing", "directory"])
def test_an_unreadable_key_file_stops_startup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], problem: str
) -> None:
    path = tmp_path / "keys"
    if problem == "directory":
        path.mkdir()
    with pytest.raises(SystemExit) as exit_info:
        parse_serve_args(["--api-key-file", str(path)])
    assert exit_info.value.code == 2
    assert f"cannot read API key file {path}" in capsys.readouterr().err


def test_a_missing_key_file_stops_the_real_router(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    result = subprocess.run(
        [sys.executable, "-m", "router", "serve", "--port", "0", "--api-key-file", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert f"cannot read API key file {missing}" in result.stderr


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("myhost.lan", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_warning_only_without_key_beyond_loopback() -> None:
    with capture_logs() as logs:
        warn_if_exposed(ServeSettings(host="0.0.0.0"))
        warn_if_exposed(ServeSettings(host="0.0.0.0", api_keys=(ApiKey("k"),)))
        warn_if_exposed(ServeSettings(host="127.0.0.1"))
    assert [(log["log_level"], log["host"]) for log in logs] == [("warning", "0.0.0.0")]


def _startup_log(args: list[str]) -> list[dict[str, object]]:
    # 192.0.2.1 (TEST-NET-1) is never this machine's, so the bind fails and nothing is exposed,
    # but only after the startup checks have logged.
    result = subprocess.run(
        [sys.executable, "-m", "router", "serve", "--host", "192.0.2.1", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    return [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]


def test_the_real_router_warns_when_exposed_without_a_key(models_dir: Path) -> None:
    records = _startup_log(["--models-dir", str(models_dir)])
    warnings = [r for r in records if str(r.get("event", "")).startswith("security:")]
    assert [(r["level"], r["host"]) for r in warnings] == [("warning", "192.0.2.1")]
    records = _startup_log(["--models-dir", str(models_dir), "--api-key", "k"])
    assert not [r for r in records if str(r.get("event", "")).startswith("security:")]
