"""Bad Ollama-shaped bodies on every ``/api/*`` route get a 4xx with Ollama's error JSON
(``{"error": "…"}``), never a 5xx, and the router goes on serving."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.support.router_process import RouterProcess

ROUTES = [
    ("POST", "/api/chat"), ("POST", "/api/generate"), ("POST", "/api/show"),
    ("POST", "/api/embed"), ("POST", "/api/embeddings"), ("POST", "/api/pull"),
    ("DELETE", "/api/delete"), ("POST", "/api/copy"),
]  # fmt: skip
# Each a body that some route reads and none can act on.
BAD_BODIES: list[bytes | Any] = [
    b"", b"{", b"null", b"[]", b"42", b'"model"', b"\xff\xfe", b'{"model": }',
    {}, {"model": ""}, {"model": None}, {"model": 7}, {"model": ["alpha"]},
    {"model": "nobody"}, {"model": "nobody:latest", "messages": [], "prompt": "hi"},
    {"model": "alpha", "messages": "hi"}, {"model": "alpha", "messages": [{"content": "x"}]},
    {"model": "alpha", "messages": [{"role": "user", "content": 5}]},
    {"model": "alpha", "messages": [{"role": "user", "content": "x", "images": ["%%%"]}]},
    {"model": "alpha", "messages": [{"role": "user", "content": "x", "images": "abc"}]},
    {"model": "alpha", "messages": [{"role": "user", "content": "x", "tool_calls": [{}]}]},
    {"model": "alpha", "prompt": 5}, {"model": "alpha", "prompt": "x", "raw": "yes"},
    {"model": "alpha", "prompt": "x", "images": ["not base64!"]},
    {"model": "alpha", "prompt": "x", "suffix": "y"},  # no fill-in-the-middle tokens
    {"model": "alpha", "prompt": "x", "template": "{{ range .Messages }}{{ end }}"},
    {"model": "alpha", "prompt": "x", "format": "yaml"},
    {"model": "alpha", "prompt": "x", "format": 3},
    {"model": "alpha", "prompt": "x", "format": {"type": "no such type"}},
    {"model": "alpha", "prompt": "x", "keep_alive": "soon"},
    {"model": "alpha", "prompt": "x", "keep_alive": [1]},
    {"model": "alpha", "prompt": "x", "think": "very"},
    {"model": "alpha", "prompt": "x", "stream": "no"},
    {"model": "alpha", "prompt": "x", "options": []},
    {"model": "alpha", "prompt": "x", "options": {"temperature": "hot"}},
    {"model": "alpha", "prompt": "x", "options": {"temperature": -1}},
    {"model": "alpha", "prompt": "x", "options": {"top_p": 7}},
    {"model": "alpha", "prompt": "x", "options": {"top_k": -3}},
    {"model": "alpha", "prompt": "x", "options": {"seed": 10**30}},
    {"model": "alpha", "prompt": "x", "options": {"stop": "x"}},
    {"model": "alpha", "prompt": "x", "options": {"num_predict": 1.5}},
    {"model": "alpha", "prompt": "x", "options": {"repeat_penalty": 0}},
    {"model": "alpha", "messages": [{"role": "user", "content": "x"}], "tools": "all"},
    {"model": "alpha", "messages": [{"role": "user", "content": "x"}], "tools": [{"x": 1}]},
    {"model": "alpha", "input": 5}, {"model": "alpha", "input": [1, 2]},
    {"model": "alpha", "input": []}, {"model": "alpha", "input": "x"},
    {"model": "embedder", "input": ["x"], "options": {"temperature": "x"}},
    {"model": "alpha", "verbose": "x"}, {"source": "nobody", "destination": "x"},
    {"source": "alpha"}, {"source": "alpha", "destination": ""},
    {"model": "not a repo"}, {"model": "hf.co/"}, {"model": "hf.co/a/b:NOTATAG!"},
]  # fmt: skip


def _send(router: RouterProcess, method: str, path: str, body: bytes | Any) -> Any:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    return router.client.request(method, path, content=content, headers=headers, timeout=120)


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_bad_bodies_get_ollamas_4xx(shared_router: RouterProcess, method: str, path: str) -> None:
    for body in BAD_BODIES:
        reply = _send(shared_router, method, path, body)
        if reply.status_code == 200:
            continue  # a body this route reads as a fine one (a pull of a cached name, …)
        what = f"{method} {path} {body!r}: {reply.status_code} {reply.text[:300]}"
        assert 400 <= reply.status_code < 500, what
        assert reply.headers["content-type"].startswith("application/json"), what
        error = reply.json()
        assert list(error) == ["error"], what
        assert isinstance(error["error"], str), what
        assert error["error"], what


def test_random_json_never_gets_a_5xx(shared_router: RouterProcess) -> None:
    chooser = random.Random(28)
    values: list[Any] = [None, True, -1, 0, 1.5, 10**20, "", "x", "alpha", [], {}, ["x"], {"a": 1}]
    keys = ["model", "messages", "prompt", "options", "format", "stream", "keep_alive", "think",
            "images", "tools", "input", "suffix", "raw", "system", "template", "source",
            "destination"]  # fmt: skip
    for _ in range(150):
        body = {key: chooser.choice(values) for key in chooser.sample(keys, chooser.randint(1, 6))}
        if chooser.random() < 0.7:
            body["model"] = "alpha"
        body["stream"] = False
        body.setdefault("options", {"num_predict": 1})
        method, path = chooser.choice(ROUTES)
        if path in ("/api/pull", "/api/delete", "/api/copy"):
            continue  # these change the catalogue: the test above covers their refusals
        reply = _send(shared_router, method, path, body)
        assert reply.status_code < 500, f"{path} {body}: {reply.status_code} {reply.text[:300]}"
    # Still serving.
    assert shared_router.client.get("/api/version").status_code == 200
    chat = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    answer = shared_router.client.post("/api/chat", json={**chat, "options": {"num_predict": 1}})
    assert answer.json()["done"] is True
