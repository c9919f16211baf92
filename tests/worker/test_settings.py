"""``python -m worker``'s flags as WorkerSettings: how the options combine."""

from __future__ import annotations

from pathlib import Path

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


def test_a_projector_and_where_it_runs() -> None:
    plain = parse_worker_args(["--model", "m.gguf"])
    assert (plain.mmproj, plain.mmproj_offload) == (None, True)
    settings = parse_worker_args(["-m", "m.gguf", "-mm", "p.gguf", "--no-mmproj-offload"])
    assert (settings.mmproj, settings.mmproj_offload) == (Path("p.gguf"), False)


def test_reasoning_flags() -> None:
    default = parse_worker_args(["--model", "m.gguf"])
    assert (default.reasoning_format, default.reasoning_budget) == ("auto", -1)
    settings = parse_worker_args(
        ["--model", "m.gguf", "--reasoning-format", "none", "--reasoning-budget", "0"]
    )
    assert (settings.reasoning_format, settings.reasoning_budget) == ("none", 0)
    assert default.reasoning_budget_message == ""
    told = parse_worker_args(["--model", "m.gguf", "--reasoning-budget-message", "Time's up."])
    assert told.reasoning_budget_message == "Time's up."


@pytest.mark.parametrize("argv", [["--reasoning-format", "verbose"], ["--reasoning-budget", "-2"]])
def test_bad_reasoning_flags_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_worker_args(["--model", "m.gguf", *argv])


@pytest.mark.parametrize(
    ("argv", "kwargs"),
    [
        ([], {}),
        (["--reasoning", "off"], {"enable_thinking": False}),
        (["-rea", "on"], {"enable_thinking": True}),
        (["--reasoning", "on", "--chat-template-kwargs", '{"enable_thinking": false}'],
         {"enable_thinking": False}),
    ],
)  # fmt: skip
def test_reasoning_on_or_off_is_enable_thinking_unless_the_kwargs_say(
    argv: list[str], kwargs: dict[str, bool]
) -> None:
    assert parse_worker_args(["--model", "m.gguf", *argv]).chat_template_kwargs == kwargs


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


def test_a_comma_list_of_aliases_names_the_model_by_the_first_in_order() -> None:
    # As llama-server's --alias: every name is listed, the id is the first in sorted order.
    settings = parse_worker_args(["--model", "m.gguf", "--alias", "tinyllama-2,fim,code"])
    assert (settings.alias, settings.aliases) == ("code", ("code", "fim", "tinyllama-2"))
    assert parse_worker_args(["--model", "dir/m.gguf"]).alias == "m"


def test_tags_are_a_comma_list_kept_as_a_sorted_set() -> None:
    settings = parse_worker_args(["--model", "m.gguf", "--tags", "small, chat,,small"])
    assert settings.tags == ("chat", "small")
    assert parse_worker_args(["--model", "m.gguf"]).tags == ()


def test_llama_server_switches_become_settings() -> None:
    settings = parse_worker_args(
        ["--model", "m.gguf", "--metrics", "--no-slots", "--context-shift", "--keep", "-1"]
    )
    assert (settings.metrics, settings.endpoint_slots, settings.context_shift, settings.keep) == (
        True,
        False,
        True,
        -1,
    )
    defaults = parse_worker_args(["--model", "m.gguf"])
    assert (defaults.metrics, defaults.endpoint_slots, defaults.context_shift, defaults.keep) == (
        False,
        True,
        False,
        0,
    )


def test_rpc_servers_take_every_layer_unless_told_otherwise() -> None:
    settings = parse_worker_args(["-m", "m.gguf", "--rpc", "10.0.0.2:50052", "--rpc", "h:1,h:1"])
    assert [str(endpoint) for endpoint in settings.rpc] == ["10.0.0.2:50052", "h:1"]
    assert settings.n_gpu_layers == -1  # all, as llama-server's default when they fit
    assert parse_worker_args(["-m", "m.gguf", "--rpc", "h:1", "-ngl", "2"]).n_gpu_layers == 2
    assert parse_worker_args(["-m", "m.gguf"]).n_gpu_layers == 0
