"""``GET``/``POST /tools`` against a real router (docs/tools.md): llama-server's JSON, the
tools root, the exec opt-in, key scopes, the audit log and CORS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from router.cli.main import parse_serve_args
from router.tools.toolbox import BUILTIN_TOOL_NAMES
from tests.support.router_process import RouterProcess, running_router

ADMIN = "admin-key-0123456789"
INFERENCE = "inference-key-0123456789"


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("tools")
    root = base / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('needle')\n")
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret needle\n")
    (root / "escape").symlink_to(outside)
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    return root


@pytest.fixture(scope="module")
def router(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    keys = tmp_path_factory.mktemp("keys") / "keys.txt"
    keys.write_text(f"{ADMIN} admin\n{INFERENCE} inference\n")
    args = ["--tools", "all", "--tools-allow-exec", "--tools-root", str(workspace)]
    secrets = {"HF_TOKEN": "hf_secret_token"}
    with running_router([*args, "--api-key-file", str(keys)], env=secrets) as running:
        yield running


def _call(
    router: RouterProcess, tool: str, params: dict[str, Any], key: str = ADMIN, **headers: str
) -> httpx.Response:
    body = {"tool": tool, "params": params}
    return router.client.post("/tools", json=body, headers={**_auth(key), **headers})


def _ok(router: RouterProcess, tool: str, params: dict[str, Any], **headers: str) -> Any:
    response = _call(router, tool, params, **headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_listing_has_llama_servers_shape(router: RouterProcess) -> None:
    listing = router.client.get("/tools", headers=_auth(INFERENCE)).raise_for_status().json()
    assert [entry["tool"] for entry in listing] == list(BUILTIN_TOOL_NAMES)
    read = listing[0]
    assert read["display_name"] == "Read file"
    assert read["type"] == "server"
    assert read["permissions"] == {"write": False}
    assert read["definition"]["type"] == "function"
    assert read["definition"]["function"]["name"] == "read_file"
    assert read["definition"]["function"]["parameters"]["required"] == ["path"]
    writes = {entry["tool"] for entry in listing if entry["permissions"]["write"]}
    assert writes == {"write_file", "edit_file", "exec_shell_command"}
    # /v1/key tells a page the tools are on (it need not ask /tools to find out).
    assert router.client.get("/v1/key", headers=_auth(INFERENCE)).json()["tools"] is True


def test_write_read_and_edit_a_file(router: RouterProcess, workspace: Path) -> None:
    written = _ok(router, "write_file", {"path": "out/new.txt", "content": "a\nb\nc\n"})
    assert written == {"result": "file written successfully", "path": "out/new.txt", "bytes": 6}
    assert (workspace / "out" / "new.txt").read_text() == "a\nb\nc\n"
    edited = _ok(
        router,
        "edit_file",
        {"path": "out/new.txt", "edits": [{"old_text": "b", "new_text": "B"}]},
    )
    assert edited["edits_applied"] == 1
    numbered = _ok(
        router, "read_file", {"path": "out/new.txt", "start_line": 2, "append_loc": True}
    )
    assert numbered == {"plain_text_response": "2\u2192B\n3\u2192c\n"}
    refused = _ok(
        router, "edit_file", {"path": "notes.txt", "edits": [{"old_text": "o", "new_text": "0"}]}
    )
    assert "must be unique" in refused["error"]


def test_read_file_answers_base64_when_the_client_asks(router: RouterProcess) -> None:
    answer = _ok(router, "read_file", {"path": "notes.txt"}, **{"x-resp-type": "base64"})
    assert answer == {"base64": "b25lCnR3bwp0aHJlZQo=", "size_bytes": 14}
    # The model cannot ask for it: a parameter of that name is dropped.
    plain = _ok(router, "read_file", {"path": "notes.txt", "resp_type": "base64"})
    assert plain == {"plain_text_response": "one\ntwo\nthree\n"}


def test_searches_stay_inside_the_root(router: RouterProcess) -> None:
    grep = _ok(router, "grep_search", {"path": ".", "pattern": "needle"})["plain_text_response"]
    # The symlinked file and directory lead out of the root: never read.
    assert "src/main.py:print('needle')" in grep
    assert "secret" not in grep
    assert "Total matches: 1" in grep
    glob = _ok(router, "file_glob_search", {"path": ".", "include": "*.py"})
    assert glob["entries"] == [{"path": "src/main.py", "type": "file"}]


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("read_file", {"path": "../outside/secret.txt"}),
        ("read_file", {"path": "escape/secret.txt"}),
        ("read_file", {"path": "secret-link.txt"}),
        ("read_file", {"path": "/etc/hostname"}),
        ("write_file", {"path": "escape/planted.txt", "content": "x"}),
        ("write_file", {"path": "../planted.txt", "content": "x"}),
        ("edit_file", {"path": "secret-link.txt", "edits": [{"old_text": "top", "new_text": "x"}]}),
        ("grep_search", {"path": "escape", "pattern": "needle"}),
        ("file_glob_search", {"path": ".."}),
    ],
)
def test_paths_out_of_the_root_are_refused(
    router: RouterProcess, workspace: Path, tool: str, params: dict[str, Any]
) -> None:
    assert _ok(router, tool, params) == {
        "error": f"path is outside the tools root: {params['path']}"
    }
    assert not (workspace.parent / "outside" / "planted.txt").exists()
    assert not (workspace.parent / "planted.txt").exists()
    assert (workspace.parent / "outside" / "secret.txt").read_text() == "top secret needle\n"


def test_the_cwd_header_is_confined_and_the_models_cwd_ignored(router: RouterProcess) -> None:
    answer = _ok(router, "read_file", {"path": "main.py", "cwd": "/"}, **{"x-tool-cwd": "src"})
    assert answer == {"plain_text_response": "print('needle')\n"}
    outside = _call(router, "read_file", {"path": "secret.txt"}, **{"x-tool-cwd": "escape"})
    assert outside.status_code == 400
    assert "outside the tools root" in outside.json()["error"]["message"]


def test_an_inference_key_may_read_but_not_write_or_run(
    router: RouterProcess, workspace: Path
) -> None:
    assert "error" not in _call(router, "read_file", {"path": "notes.txt"}, INFERENCE).json()
    for tool, params in (
        ("write_file", {"path": "by-inference.txt", "content": "x"}),
        ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "one", "new_text": "1"}]}),
        ("exec_shell_command", {"command": "touch by-inference.txt"}),
    ):
        refused = _call(router, tool, params, INFERENCE)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["type"] == "permission_error"
    assert not (workspace / "by-inference.txt").exists()
    assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"
    router.wait_for_log("tool call", tool="write_file", outcome="refused: the key's scope")


def test_without_a_key_nothing_runs(router: RouterProcess) -> None:
    answer = router.client.post("/tools", json={"tool": "get_info"})
    assert answer.status_code == 401


def test_every_call_is_logged_with_its_key_and_parameters(router: RouterProcess) -> None:
    _ok(router, "read_file", {"path": "notes.txt", "end_line": 7})
    params = '{"path":"notes.txt","end_line":7}'
    record = router.wait_for_log("tool call", tool="read_file", params=params, outcome="ok")
    # The key is named by its id, never by itself.
    assert record["key"] is not None
    assert ADMIN not in json.dumps(record)
    _call(router, "read_file", {"path": "../x"})
    router.wait_for_log(
        "tool call", tool="read_file", outcome="error: path is outside the tools root: ../x"
    )


def test_exec_runs_in_the_working_directory_and_streams(
    router: RouterProcess, workspace: Path
) -> None:
    plain = _ok(router, "exec_shell_command", {"command": "pwd; echo err >&2; exit 3"})
    assert plain["plain_text_response"] == f"{workspace}\nerr\n\n[exit code: 3]"
    body = {"tool": "exec_shell_command", "params": {"command": "echo hello"}, "stream": True}
    with router.client.stream("POST", "/tools", json=body, headers=_auth(ADMIN)) as response:
        events = [
            json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")
        ]
    assert events[-1] == {"done": True}
    text = "".join(event["chunk"] for event in events[:-1])
    assert text == "hello\n\n[exit code: 0]"


def test_exec_never_sees_the_routers_secrets(router: RouterProcess) -> None:
    answer = _ok(router, "exec_shell_command", {"command": 'echo "[$HF_TOKEN]"'})
    assert answer["plain_text_response"] == "[]\n\n[exit code: 0]"


def test_exec_timeout_kills_the_command(router: RouterProcess) -> None:
    answer = _ok(router, "exec_shell_command", {"command": "echo started; sleep 600", "timeout": 1})
    assert answer["plain_text_response"].startswith("started\n")
    assert answer["plain_text_response"].endswith("[exit due to timed out]")


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"tool": "no_such_tool"}, 404, 'unknown tool "no_such_tool"'),
        ({"tool": "read_file", "stream": True}, 404, "does not support stream = true"),
        ({"tool": "read_file", "params": {"path": 3}}, 400, '"path" must be a string'),
        ({"tool": "read_file", "params": {"path": "a\0b"}}, 400, '"path" must not contain a NUL'),
        ({"params": {}}, 400, "invalid request"),
        ({"tool": "read_file", "params": []}, 400, "invalid request"),
    ],
)
def test_bad_requests_get_the_error_json(
    router: RouterProcess, body: dict[str, Any], status: int, message: str
) -> None:
    answer = router.client.post("/tools", json=body, headers=_auth(ADMIN))
    assert answer.status_code == status
    assert message in answer.json()["error"]["message"]


def test_a_tool_runtime_is_refused_rather_than_run_on_the_host(router: RouterProcess) -> None:
    answer = _call(
        router,
        "exec_shell_command",
        {"command": "echo hi"},
        **{"x-tool-runtime": "docker-container:x"},
    )
    assert answer.status_code == 400
    assert "tool runtimes are not supported" in answer.json()["error"]["message"]


def test_cors_is_limited_to_localhost_when_tools_are_on(router: RouterProcess) -> None:
    preflight = {"Access-Control-Request-Method": "POST"}
    evil = router.client.options("/tools", headers={"Origin": "https://evil.example", **preflight})
    assert "access-control-allow-origin" not in evil.headers
    local = router.client.options(
        "/tools", headers={"Origin": "http://localhost:5173", **preflight}
    )
    assert local.headers["access-control-allow-origin"] == "http://localhost:5173"


def test_tools_are_off_by_default() -> None:
    with running_router([]) as plain:
        listing = plain.client.get("/tools")
        assert listing.status_code == 403
        assert listing.json()["error"]["type"] == "feature_disabled"
        called = plain.client.post("/tools", json={"tool": "read_file", "params": {"path": "x"}})
        assert called.status_code == 403


def test_exec_needs_its_own_opt_in(tmp_path: Path) -> None:
    assert parse_serve_args(["--tools", "all"]).tools_allow_exec is False
    with pytest.raises(SystemExit):
        parse_serve_args(["--tools", "read_file,exec_shell_command"])
    with running_router(["--tools", "all", "--tools-root", str(tmp_path)]) as router:
        names = [entry["tool"] for entry in router.client.get("/tools").json()]
        assert names == [name for name in BUILTIN_TOOL_NAMES if name != "exec_shell_command"]
        refused = router.client.post("/tools", json={"tool": "exec_shell_command"})
        assert refused.status_code == 404


def test_cors_origins_given_explicitly_win_over_the_tools_default() -> None:
    assert parse_serve_args(["--tools", "all"]).cors_origins == ("localhost",)
    explicit = parse_serve_args(["--tools", "all", "--cors-origins", "https://app.example"])
    assert explicit.cors_origins == ("https://app.example",)
    assert parse_serve_args([]).cors_origins == ("*",)


def test_unknown_tools_and_a_missing_root_stop_the_router(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        parse_serve_args(["--tools", "read_file,web_search"])
    with pytest.raises(SystemExit):
        parse_serve_args(["--tools", "all", "--tools-root", str(tmp_path / "missing")])
