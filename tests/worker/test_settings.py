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


def test_lora_flags_repeat_and_number_plain_adapters_first() -> None:
    settings = parse_worker_args(
        [
            "-m",
            "m.gguf",
            "--lora-scaled",
            "s.gguf:0.5",
            "--lora",
            "a.gguf,b.gguf",
            "--lora",
            "c.gguf",
        ]
    )
    assert settings.lora == (("a.gguf", 1.0), ("b.gguf", 1.0), ("c.gguf", 1.0), ("s.gguf", 0.5))
    assert settings.lora_init_without_apply is False
    assert parse_worker_args(["-m", "m.gguf", "--lora-init-without-apply"]).lora_init_without_apply
