"""The npm packages ``openai``, ``ollama`` and ``@anthropic-ai/sdk`` against ``corral serve``.

One router for the module (``alpha``, a chat model, and ``embedder``, an embedding model); one
Node script per client under ``node_clients/`` makes the calls that library's users make and
prints their results as JSON, which the tests here assert on. The packages, pinned by
``node_clients/package-lock.json``, are installed from the npm registry into
``~/.cache/corral/npm-clients/<lock hash>/`` once, and reused while the lock is unchanged.
Without Node.js 20+ and npm, or without the registry, the tests skip, except in CI
(``CI=true``), where that is a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.support.files.tiny_gguf import TEXT_EMBEDDING_LENGTH, write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

SCRIPTS = Path(__file__).with_name("node_clients")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "corral" / "npm-clients"
# node_clients/checks.mjs's limit: the tiny models never end a turn of their own accord
# (tests/support/files/tiny_gguf.py), so every reply is that many tokens, cut by the limit.
MAX_TOKENS = 8

# `npm ci`: exactly the lock's versions, from npm's own cache where it has them; no install
# scripts (none is needed); one quick retry, so that a machine without the registry skips in
# seconds rather than after npm's minute of retries.
NPM_CI_OPTIONS = (
    "--prefer-offline",
    "--ignore-scripts",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    "--fetch-retries=1",
    "--fetch-retry-maxtimeout=10000",
)

Results = dict[str, dict[str, Any]]


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def _node_major(node: str) -> int:
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    return int(version.stdout.strip().lstrip("v").split(".")[0])


def _install(npm: str) -> Path:
    """The locked packages' ``node_modules``, installed on first use into a folder named by the
    lock's hash; a half-finished install (two test runs at once, an interrupted one) is never
    seen, since each installs in a folder of its own and renames it into place."""
    lock = (SCRIPTS / "package-lock.json").read_bytes()
    target = CACHE / hashlib.sha256(lock).hexdigest()[:16]
    if (target / "node_modules").is_dir():
        return target / "node_modules"
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="installing-", dir=CACHE))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(SCRIPTS / name, staging / name)
        done = subprocess.run(
            [npm, "ci", *NPM_CI_OPTIONS], cwd=staging, capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            said = " | ".join(done.stderr.splitlines()[:5])
            _unavailable(f"npm ci failed (is the npm registry reachable?): {said}")
        try:
            staging.rename(target)
        except OSError:  # another run finished first: its copy is the same
            if not (target / "node_modules").is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target / "node_modules"


@pytest.fixture(scope="module")
def node_clients(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the scripts and the installed packages beside them (Node resolves an ES
    module's imports from the folder it lies in, and NODE_PATH does not apply to them)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _unavailable("node or npm is missing (Debian: apt-get install nodejs npm)")
    if _node_major(node) < 20:
        _unavailable(f"{node} is older than Node.js 20, which the pinned npm clients need")
    folder = tmp_path_factory.mktemp("node-clients")
    for script in SCRIPTS.glob("*.mjs"):
        shutil.copy(script, folder / script.name)
    (folder / "package.json").write_text('{"type": "module"}')
    (folder / "node_modules").symlink_to(_install(npm), target_is_directory=True)
    return folder


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    directory = tmp_path_factory.mktemp("node-client-models")
    write_tiny_gguf(directory / "alpha.gguf", name="alpha")
    write_tiny_gguf(directory / "embedder.gguf", name="embedder", pooling="mean")
    with running_router(["--models-dir", str(directory), "--ctx-size", "512"]) as router:
        yield router


@pytest.fixture(scope="module")
def run_client(node_clients: Path, served: RouterProcess) -> Callable[[str], Results]:
    """``run_client("openai")`` runs ``openai.mjs`` once for the module: its checks' results."""
    results: dict[str, Results] = {}

    def run(client: str) -> Results:
        if client not in results:
            done = subprocess.run(
                ["node", f"{client}.mjs"],
                cwd=node_clients,
                env={**os.environ, "CORRAL_URL": served.url},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            results[client] = json.loads(done.stdout)
        return results[client]

    return run


def _result(results: Results, check: str) -> Any:
    outcome = results[check]
    assert "error" not in outcome, f"{check}: {outcome}"
    return outcome["result"]


def _assert_usage(prompt: int, completion: int, total: int | None = None) -> None:
    assert prompt > 0
    assert completion == MAX_TOKENS
    if total is not None:
        assert total == prompt + completion


def test_openai_lists_chats_streams_and_embeds(run_client: Callable[[str], Results]) -> None:
    results = run_client("openai")
    listed = _result(results, "models_list")
    assert {"id": "alpha", "object": "model"} in listed
    assert {"id": "embedder", "object": "model"} in listed

    chat = _result(results, "chat")
    assert (chat["object"], chat["model"]) == ("chat.completion", "alpha")
    assert chat["role"] == "assistant"
    assert chat["content"]
    assert chat["finish_reason"] == "length"
    usage = chat["usage"]
    _assert_usage(usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])

    streamed = _result(results, "chat_stream")
    assert streamed["chunks"] > 1
    assert streamed["content"]
    assert streamed["finish_reason"] == "length"
    usage = streamed["usage"]  # stream_options.include_usage: the last chunk's
    _assert_usage(usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])

    embedded = _result(results, "embeddings")
    assert embedded["object"] == "list"
    assert embedded["indices"] == [0, 1]
    assert embedded["lengths"] == [TEXT_EMBEDDING_LENGTH] * 2
    assert embedded["usage"]["prompt_tokens"] > 0


def test_openai_retrieves_a_model(run_client: Callable[[str], Results]) -> None:
    assert _result(run_client("openai"), "models_retrieve") == {"id": "alpha", "object": "model"}


def test_ollama_lists_chats_generates_and_embeds(run_client: Callable[[str], Results]) -> None:
    results = run_client("ollama")
    names = {entry["name"] for entry in _result(results, "list")}
    assert {"alpha", "embedder"} <= {name.removesuffix(":latest") for name in names}

    for check, text in [
        ("chat", "content"),
        ("chat_stream", "content"),
        ("generate", "response"),
        ("generate_stream", "response"),
    ]:
        reply = _result(results, check)
        assert reply[text], check
        assert reply["done"] is True, check
        assert reply["done_reason"] == "length", check
        _assert_usage(reply["prompt_eval_count"], reply["eval_count"])
        if check.endswith("_stream"):
            assert reply["parts"] > 1, check
    assert _result(results, "chat")["role"] == "assistant"

    embedded = _result(results, "embed")
    assert embedded["lengths"] == [TEXT_EMBEDDING_LENGTH] * 2


def test_anthropic_messages_whole_and_streamed(run_client: Callable[[str], Results]) -> None:
    results = run_client("anthropic")
    for check in ("message", "message_stream"):
        message = _result(results, check)
        assert (message["type"], message["role"], message["model"]) == (
            "message",
            "assistant",
            "alpha",
        )
        assert message["text"], check
        assert message["stop_reason"] == "max_tokens", check
        _assert_usage(message["usage"]["input_tokens"], message["usage"]["output_tokens"])

    streamed = _result(results, "message_stream")
    assert streamed["streamed"] == streamed["text"]  # the text events add up to the message
    events = streamed["events"]
    assert events[0] == "message_start"
    assert events[-1] == "message_stop"
    assert {"content_block_start", "content_block_delta", "message_delta"} <= set(events)

    counted = _result(results, "count_tokens")
    assert counted["input_tokens"] == _result(results, "message")["usage"]["input_tokens"]


def test_anthropic_lists_and_retrieves_models(run_client: Callable[[str], Results]) -> None:
    results = run_client("anthropic")
    page = _result(results, "models_list")
    assert page["has_more"] is False
    ids = [entry["id"] for entry in page["data"]]
    assert {"alpha", "embedder"} <= set(ids)
    assert (page["first_id"], page["last_id"]) == (ids[0], ids[-1])
    for entry in page["data"]:
        assert entry["type"] == "model"
        assert entry["display_name"]
        assert entry["created_at"]
    alpha = _result(results, "models_retrieve")
    assert (alpha["type"], alpha["id"]) == ("model", "alpha")
