"""``python -m worker``'s flags as WorkerSettings: how the options combine."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from worker.settings.parse import parse_worker_args
from worker.settings.worker_settings import WorkerSettings


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
    assert settings.n_gpu_layers == -1  # auto: all, as llama-server's default when they fit
    assert parse_worker_args(["-m", "m.gguf", "--rpc", "h:1", "-ngl", "2"]).n_gpu_layers == 2


def test_gpu_defaults_are_llama_servers() -> None:
    settings = parse_worker_args(["--model", "m.gguf"])
    assert settings.n_gpu_layers == -1  # auto: the fit may lower it
    gpu = settings.gpu
    assert (gpu.fit, gpu.fit_target_mib, gpu.fit_ctx) == (True, (1024,), 4096)
    assert (gpu.devices, gpu.split_mode, gpu.main_gpu, gpu.tensor_split) == (None, "layer", 0, ())
    assert (gpu.kv_offload, gpu.op_offload, gpu.cpu_moe) == (True, True, False)


@pytest.mark.parametrize(("value", "layers"), [("auto", -1), ("all", -2), ("7", 7), ("0", 0)])
def test_gpu_layers_keep_auto_apart_from_all(value: str, layers: int) -> None:
    # llama.cpp's fit lowers only -1 (auto, the default); all and a number are the user's.
    assert parse_worker_args(["--model", "m.gguf", "-ngl", value]).n_gpu_layers == layers


def test_gpu_flags_as_llama_server_spells_them() -> None:
    settings = parse_worker_args(
        [
            "-m",
            "m.gguf",
            "-fit",
            "off",
            "-fitt",
            "512,2048",
            "-fitc",
            "8192",
            "-sm",
            "row",
            "-ts",
            "3/1",
            "-mg",
            "1",
            "-ot",
            "exps=CPU",
            "-cmoe",
            "-ncmoe",
            "3",
            "-ncffn",
            "2",
            "-nkvo",
            "--no-op-offload",
            "-dev",
            "CUDA0,CUDA1",
            "-devd",
            "CUDA1",
        ]
    )
    gpu = settings.gpu
    assert (gpu.fit, gpu.fit_target_mib, gpu.fit_ctx) == (False, (512, 2048), 8192)
    assert (gpu.split_mode, gpu.tensor_split, gpu.main_gpu) == ("row", (3.0, 1.0), 1)
    assert (gpu.override_tensor, gpu.cpu_moe, gpu.n_cpu_moe, gpu.n_cpu_ffn) == (
        ("exps=CPU",),
        True,
        3,
        2,
    )
    assert (gpu.kv_offload, gpu.op_offload) == (False, False)
    assert (gpu.devices, gpu.draft_devices) == (("CUDA0", "CUDA1"), ("CUDA1",))


def test_long_gpu_spellings() -> None:
    gpu = parse_worker_args(
        [
            "-m",
            "m.gguf",
            "--fit",
            "on",
            "--fit-target",
            "256",
            "--kv-offload",
            "--op-offload",
            "--cpu-moe",
        ]
    ).gpu
    assert (gpu.fit, gpu.fit_target_mib, gpu.kv_offload, gpu.op_offload, gpu.cpu_moe) == (
        True,
        (256,),
        True,
        True,
        True,
    )


@pytest.mark.parametrize(
    "argv",
    [["-fit", "maybe"], ["-sm", "diagonal"], ["-ts", "3,x"], ["-fitt", "-5"], ["-ncmoe", "-1"]],
)
def test_bad_gpu_values_stop_the_worker(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_worker_args(["-m", "m.gguf", *argv])


def test_a_draft_model_takes_its_own_devices_and_none_of_the_models_overrides() -> None:
    gpu = parse_worker_args(
        ["-m", "m.gguf", "-dev", "CUDA0", "-devd", "CUDA1", "-cmoe", "-ot", "x=CPU", "-sm", "row"]
    ).gpu
    draft = gpu.for_draft()
    assert (draft.devices, draft.split_mode) == (("CUDA1",), "row")
    assert (draft.override_tensor, draft.cpu_moe) == ((), False)
    assert parse_worker_args(["-m", "m.gguf", "-dev", "CUDA0"]).gpu.for_draft().devices == (
        "CUDA0",
    )


@pytest.mark.parametrize("flag", ["--spec-draft-cpu-moe", "-cmoed", "--cpu-moe-draft"])
def test_a_draft_model_keeps_its_experts_on_the_cpu_as_told(flag: str) -> None:
    gpu = parse_worker_args(["-m", "m.gguf", flag]).gpu
    assert (gpu.cpu_moe, gpu.for_draft().cpu_moe) == (False, True)
    assert parse_worker_args(["-m", "m.gguf", "-cmoe"]).gpu.for_draft().cpu_moe is False


def test_settings_given_no_flags_are_the_settings_built_without_any() -> None:
    # Both read llama-server's defaults from the option table, so no field keeps a default of
    # its own that the flags' parser does not know (or the other way round).
    parsed = parse_worker_args(["--model", "m.gguf"])
    built = WorkerSettings(model=Path("m.gguf"), alias="m")
    # Decided at parse time from the host, not defaults: the CPU count, the cache folder.
    host = {"threads", "kv_cache_dir"}
    for field in fields(WorkerSettings):
        if field.name not in host:
            assert getattr(parsed, field.name) == getattr(built, field.name), field.name


def test_an_empty_path_flag_is_one_not_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where an empty path read as "." would point
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    argv = ["-m", "m.gguf", "--kv-cache-dir", "", "-lcs", "", "-lcd", "", "-md", ""]
    settings = parse_worker_args(argv)
    assert settings.kv_cache_dir == tmp_path / "cache" / "corral" / "kv"  # the default's
    speculative = settings.speculative
    assert (speculative.lookup_cache_static, speculative.lookup_cache_dynamic) == (None, None)
    assert speculative.model_draft is None


@pytest.mark.parametrize("flag", ["--slot-save-path", "--media-path"])
def test_an_empty_folder_is_refused_as_llama_server_refuses_it(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_worker_args(["-m", "m.gguf", flag, ""])
    assert f"{flag}: not a directory: " in capsys.readouterr().err


def test_numa_and_the_window_cache_as_llama_server() -> None:
    told = parse_worker_args(
        ["--model", "m.gguf", "--numa", "isolate", "--swa-full", "-ctxcp", "4"]
    )
    assert (told.numa, told.swa_full, told.ctx_checkpoints) == ("isolate", True, 4)
    defaults = parse_worker_args(["--model", "m.gguf"])
    assert (defaults.numa, defaults.swa_full, defaults.ctx_checkpoints) == (None, False, 32)
    assert defaults.checkpoint_min_step == 8192


def test_an_unknown_numa_strategy_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse_worker_args(["--model", "m.gguf", "--numa", "mirror"])
