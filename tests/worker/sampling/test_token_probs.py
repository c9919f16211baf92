"""``post_sampling_probs`` reports what the sampler chain could draw (a real worker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.worker_process import worker

_WORD = " hello"


@pytest.fixture(scope="module")
def client(models_dir: Path) -> Iterator[httpx.Client]:
    with worker(models_dir / "alpha.gguf") as child, httpx.Client(base_url=child.url) as http:
        yield http


def _probabilities(client: httpx.Client, **fields: Any) -> list[dict[str, Any]]:
    body = {"prompt": "Once upon a time", "n_predict": 8, "seed": 1234, "temperature": 1.0,
            "cache_prompt": False, "n_probs": 10, "post_sampling_probs": True,
            **fields}  # fmt: skip
    entries: list[dict[str, Any]] = client.post("/completion", json=body).json()[
        "completion_probabilities"
    ]
    return entries


def test_with_a_grammar_every_reported_token_is_one_the_grammar_allows(
    client: httpx.Client,
) -> None:
    entries = _probabilities(client, grammar=f'root ::= "{_WORD}"+')
    allowed = _WORD * 20  # every text the grammar allows is a prefix of this
    text = ""
    for entry in entries:
        for candidate in entry["top_probs"]:
            assert allowed.startswith(text + candidate["token"]), (text, candidate)
        text += entry["token"]
    assert text
    assert allowed.startswith(text)


def test_a_token_biased_to_minus_infinity_is_never_reported(client: httpx.Client) -> None:
    first = _probabilities(client)[0]["top_probs"][0]  # the likeliest first token, unbiased
    entries = _probabilities(client, logit_bias=[[first["id"], False]])
    reported = {candidate["id"] for entry in entries for candidate in entry["top_probs"]}
    assert first["id"] not in reported
    assert reported  # other tokens still are
