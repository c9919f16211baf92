"""Chaos an operator tried by hand, kept as tests: swaps under load, and mutated request bodies.

Both run against a real router and real workers. The mutations are seeded, so a failure names
the exact body that got a 5xx and reruns the same way.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.router_process import RouterProcess, running_router

USER_HI = {"role": "user", "content": "hi"}
CHAT = {"messages": [USER_HI], "max_tokens": 2}
# 501 is a refusal, not a fault: tiny models have no infill tokens, and embeddings are off.
NOT_SUPPORTED = 501

# One valid body per route that takes JSON; mutations start from these.
VALID_BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"model": "alpha", **CHAT},
    "/v1/completions": {"model": "alpha", "prompt": "hi", "max_tokens": 2},
    "/completion": {"model": "alpha", "prompt": "hi", "n_predict": 2},
    "/infill": {"model": "alpha", "input_prefix": "def f(", "input_suffix": ")", "n_predict": 2},
    "/v1/embeddings": {"model": "alpha", "input": "hi"},
    "/v1/rerank": {"model": "alpha", "query": "q", "documents": ["a", "b"]},
    "/tokenize": {"model": "alpha", "content": "hi"},
    "/detokenize": {"model": "alpha", "tokens": [1, 2]},
    "/apply-template": {"model": "alpha", "messages": [{"role": "user", "content": "hi"}]},
    "/v1/messages": {
        "model": "alpha",
        "max_tokens": 2,
        "messages": [{"role": "user", "content": "hi"}],
    },
    "/v1/messages/count_tokens": {
        "model": "alpha",
        "messages": [{"role": "user", "content": "hi"}],
    },
    "/v1/responses": {"model": "alpha", "input": "hi", "max_output_tokens": 2},
    "/models/load": {"model": "beta"},
    "/models/unload": {"model": "beta"},
    "/models": {"model": "acme/tiny-GGUF:Q8_0"},  # a download, failing: the hub is a closed port
    "/v1/streams/lookup": {"conv_id": "chat-1::alpha"},
}
_ODD_VALUES: list[Any] = [
    None, True, -1, 0, 2**63, 1e308, -1e308, "", "x" * 5000, "../../etc/passwd", "\u0000",
    [], [None], {}, {"a": {"b": {"c": []}}}, [1, "a", None, {}],
]  # fmt: skip


def _mutate(body: dict[str, Any], rng: random.Random) -> bytes:
    """One broken variant of a valid body: a field dropped, retyped or added, or bad bytes."""
    kind = rng.randrange(6)
    mutated = json.loads(json.dumps(body))
    if kind == 0 and mutated:
        mutated.pop(rng.choice(sorted(mutated)))
    elif kind == 1 and mutated:
        mutated[rng.choice(sorted(mutated))] = rng.choice(_ODD_VALUES)
    elif kind == 2:
        mutated[rng.choice(["n_probs", "logit_bias", "stop", "tools", "stream", "seed"])] = (
            rng.choice(_ODD_VALUES)
        )
    elif kind == 3:
        text = json.dumps(body)
        return text[: rng.randrange(len(text))].encode()  # truncated JSON
    elif kind == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    else:
        return json.dumps(rng.choice(_ODD_VALUES)).encode()  # JSON, but not an object
    # A body still valid enough to generate is bounded by the router's small context.
    return json.dumps(mutated).encode()


@pytest.fixture
def small_router(models_dir: Path) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(models_dir), "--ctx-size", "128", "--models-max", "1"]
    with running_router([*args, "--offline"]) as process:
        yield process


def test_requests_alternating_two_models_on_one_slot_all_succeed(
    small_router: RouterProcess,
) -> None:
    def ask(index: int) -> int:
        model = ("alpha", "beta")[index % 2]
        body = {"model": model, **CHAT}
        with httpx.Client(base_url=small_router.url, timeout=120) as client:
            return client.post("/v1/chat/completions", json=body).status_code

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = list(pool.map(ask, range(48)))

    assert statuses == [200] * 48
    assert small_router.process.poll() is None


def test_mutated_bodies_never_get_a_server_error(small_router: RouterProcess) -> None:
    rng = random.Random(20261122)
    failures: list[str] = []
    client = small_router.client
    for _ in range(25):
        for route, body in VALID_BODIES.items():
            data = _mutate(body, rng)
            answer = client.post(route, content=data, headers={"content-type": "application/json"})
            if answer.status_code >= 500 and answer.status_code != NOT_SUPPORTED:
                failures.append(
                    f"{route} {data[:200]!r} -> {answer.status_code} {answer.text[:200]}"
                )
            elif answer.status_code >= 400:
                assert "error" in answer.json(), f"{route} {data[:200]!r}: {answer.text[:200]}"
    assert failures == []
    # Still serving, both models.
    for model in ("alpha", "beta"):
        answer = client.post("/v1/chat/completions", json={"model": model, **CHAT})
        assert answer.status_code == 200, answer.text
