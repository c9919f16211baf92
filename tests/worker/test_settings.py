"""``python -m worker``'s flags as WorkerSettings: how the options combine."""

from __future__ import annotations

import pytest

from worker.settings import parse_worker_args


@pytest.mark.parametrize("flag", ["--reranking", "--rerank"])
def test_reranking_turns_on_embeddings_with_rank_pooling(flag: str) -> None:
    settings = parse_worker_args(["--model", "m.gguf", flag])
    assert (settings.reranking, settings.embeddings, settings.pooling) == (True, True, "rank")


def test_reranking_beats_another_pooling() -> None:
    settings = parse_worker_args(["--model", "m.gguf", "--pooling", "mean", "--reranking"])
    assert settings.pooling == "rank"


def test_without_reranking_the_pooling_is_as_given() -> None:
    settings = parse_worker_args(["--model", "m.gguf", "--embeddings", "--pooling", "mean"])
    assert (settings.reranking, settings.embeddings, settings.pooling) == (False, True, "mean")


def test_a_comma_list_of_aliases_names_the_model_by_the_first_in_order() -> None:
    # As llama-server's --alias: every name is listed, the id is the first in sorted order.
    settings = parse_worker_args(["--model", "m.gguf", "--alias", "tinyllama-2,fim,code"])
    assert (settings.alias, settings.aliases) == ("code", ("code", "fim", "tinyllama-2"))
    assert parse_worker_args(["--model", "dir/m.gguf"]).alias == "m"


def test_llama_server_switches_become_settings() -> None:
    settings = parse_worker_args(
        ["--model", "m.gguf", "--metrics", "--no-slots", "--context-shift", "--keep", "-1"]
    )
    assert (settings.metrics, settings.slots, settings.context_shift, settings.keep) == (
        True,
        False,
        True,
        -1,
    )
    defaults = parse_worker_args(["--model", "m.gguf"])
    assert (defaults.metrics, defaults.slots, defaults.context_shift, defaults.keep) == (
        False,
        True,
        False,
        0,
    )
