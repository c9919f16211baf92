"""The one table of per-model options: spellings, values, errors and worker flags."""

from __future__ import annotations

import pytest

from corral.options.table import (
    OPTIONS,
    OptionError,
    find_option,
    normalise_options,
    render_worker_args,
)


def test_the_option_table_has_one_meaning_per_spelling() -> None:
    spellings = [key for spec in OPTIONS for key in (spec.name, *spec.spellings, *spec.negatives)]
    assert len(spellings) == len(set(spellings))
    for spec in OPTIONS:
        assert not spec.negatives or spec.kind == "bool", spec.name
        assert not spec.negatives or not spec.negatives[0].startswith("LLAMA_ARG_"), spec.name


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("ctx-size", "4096", ("ctx-size", "4096")),
        ("c", "4096", ("ctx-size", "4096")),
        ("LLAMA_ARG_CTX_SIZE", "4096", ("ctx-size", "4096")),
        ("ngl", "99", ("n-gpu-layers", "99")),
        ("n-gpu-layers", "all", ("n-gpu-layers", "all")),
        ("gpu-layers", "auto", ("n-gpu-layers", "auto")),
        ("t", "-1", ("threads", "-1")),
        ("b", "512", ("batch-size", "512")),
        ("ub", "128", ("ubatch-size", "128")),
        ("n", "-1", ("n-predict", "-1")),
        ("s", "42", ("seed", "42")),
        ("np", "4", ("parallel", "4")),
        ("temperature", "1", ("temp", "1")),
        ("temp", "0.70", ("temp", "0.7")),
        ("rope-freq-base", "1e6", ("rope-freq-base", "1000000")),
        ("fa", "on", ("flash-attn", "on")),
        ("flash-attn", "enabled", ("flash-attn", "on")),
        ("LLAMA_ARG_FLASH_ATTN", "-1", ("flash-attn", "auto")),
        ("ctk", "Q8_0", ("cache-type-k", "q8_0")),
        ("ctv", "f16", ("cache-type-v", "f16")),
        ("sleep-idle-seconds", "-1", ("sleep-idle-seconds", "-1")),
        ("jinja", "on", ("jinja", "true")),
        ("LLAMA_ARG_JINJA", "0", ("jinja", "false")),
        ("no-jinja", "true", ("jinja", "false")),
        ("no-mmap", "true", ("mmap", "false")),
        ("no-mmap", "off", ("mmap", "true")),
        ("LLAMA_ARG_NO_MMAP", "1", ("mmap", "false")),
        ("mmap", "Disabled", ("mmap", "false")),
        ("no-slots", "enabled", ("slots", "false")),
        ("no-webui", "1", ("webui", "false")),
        ("mlock", "TRUE", ("mlock", "true")),
        ("hf", "org/repo:Q4_K_M", ("hf-repo", "org/repo:Q4_K_M")),
        ("a", "x,y", ("alias", "x,y")),
        ("load-on-startup", "on", ("load-on-startup", "true")),
        ("__PRESET_STOP_TIMEOUT", "5", ("stop-timeout", "5")),
        ("dedup-cache-models", "1", ("dedup-cache-models", "true")),
        ("ttl", "300", ("ttl", "300")),
        ("ttl", "0.5", ("ttl", "0.5")),
        ("pin", "on", ("pin", "true")),
        ("rerank", "on", ("reranking", "true")),
        ("memory", "6G", ("memory", str(6 << 30))),
        ("memory", "512m", ("memory", str(512 << 20))),
        ("memory", "1.5GiB", ("memory", str(3 << 29))),
        ("memory", "4096", ("memory", "4096")),
        ("LLAMA_ARG_RERANKING", "1", ("reranking", "true")),
        ("lora", " a.gguf , b.gguf,", ("lora", "a.gguf,b.gguf")),
        ("lora-scaled", "a.gguf:0.50,C:/b.gguf:1e0", ("lora-scaled", "a.gguf:0.5,C:/b.gguf:1")),
        ("lora-init-without-apply", "on", ("lora-init-without-apply", "true")),
        # GPU (issue 26)
        ("fit", "enabled", ("fit", "on")),
        ("LLAMA_ARG_FIT", "0", ("fit", "off")),
        ("fitt", "512/2048", ("fit-target", "512,2048")),
        ("fit-target", "1024", ("fit-target", "1024")),
        ("fitc", "8192", ("fit-ctx", "8192")),
        ("sm", "ROW", ("split-mode", "row")),
        ("ts", "3,1", ("tensor-split", "3,1")),
        ("LLAMA_ARG_TENSOR_SPLIT", "0.75/0.25", ("tensor-split", "0.75,0.25")),
        ("mg", "1", ("main-gpu", "1")),
        ("dev", "CUDA0,CUDA1", ("device", "CUDA0,CUDA1")),
        ("ot", "exps=CPU", ("override-tensor", "exps=CPU")),
        ("cmoe", "on", ("cpu-moe", "true")),
        ("ncmoe", "4", ("n-cpu-moe", "4")),
        ("ncffn", "2", ("n-cpu-ffn", "2")),
        ("kvo", "on", ("kv-offload", "true")),
        ("nkvo", "true", ("kv-offload", "false")),
        ("LLAMA_ARG_NO_KV_OFFLOAD", "1", ("kv-offload", "false")),
        ("no-op-offload", "on", ("op-offload", "false")),
        ("devd", "CUDA1", ("spec-draft-device", "CUDA1")),
        ("device-draft", "none", ("spec-draft-device", "none")),
    ],
)
def test_spellings_and_values(key: str, value: str, expected: tuple[str, str]) -> None:
    assert normalise_options([(key, value)], where="here") == dict([expected])


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("ctx-size", "big", "key 'ctx-size': expected an integer, got 'big'"),
        ("c", "1.5", "key 'c': expected an integer, got '1.5'"),
        ("ctx-size", "-1", "expected a number of at least 0"),
        ("temp", "warm", "key 'temp': expected a number, got 'warm'"),
        ("temp", "nan", "expected a finite number"),
        ("ttl", "0", "key 'ttl': expected a number above 0"),
        ("stop-timeout", "-3", "key 'stop-timeout': expected a number of at least 0"),
        ("sleep-idle-seconds", "0", "expected a number above 0"),
        ("jinja", "maybe", "key 'jinja': expected on|off"),
        ("no-mmap", "", "key 'no-mmap': expected on|off"),
        ("pin", "maybe", "key 'pin': expected on|off|true|false|yes|no"),
        ("fa", "sometimes", "key 'fa': expected on|off"),
        ("ctk", "q3_k", "key 'ctk': expected one of f32, f16"),
        ("n-gpu-layers", "most", "expected an integer"),
        ("memory", "lots", "key 'memory': expected a size such as 512M or 8G, got 'lots'"),
        ("memory", "-1G", "expected a size"),
        ("memory", "8X", "expected a size"),
        ("lora", " , ", "key 'lora': expected one or more comma-separated values"),
        ("lora-scaled", "a.gguf", "key 'lora-scaled': expected FILE:SCALE, got 'a.gguf'"),
        ("lora-scaled", "a.gguf:much", "expected FILE:SCALE, got 'a.gguf:much'"),
        ("lora-scaled", ":1", "expected FILE:SCALE, got ':1'"),
        ("lora-scaled", "a.gguf:inf", "expected FILE:SCALE"),
        ("fit", "maybe", "key 'fit': expected on|off"),
        ("fitt", "1024,lots", "key 'fitt': expected numbers of at least 0 split by commas"),
        ("ts", "3,-1", "expected numbers of at least 0"),
        ("sm", "diagonal", "key 'sm': expected one of none, layer, row, tensor"),
        ("ncmoe", "-1", "expected a number of at least 0"),
    ],
)
def test_bad_values_name_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(OptionError) as caught:
        normalise_options([(key, value)], where="models.ini: section [foo]")
    assert str(caught.value).startswith("models.ini: section [foo]: ")
    assert message in str(caught.value)


def test_command_line_keys_may_carry_dashes() -> None:
    assert find_option("--ctx-size") == find_option("ctx-size")
    assert normalise_options([("--no-mmap", "true")], where="cli") == {"mmap": "false"}


def test_render_worker_args() -> None:
    options = [
        ("chat-template", "chatml"),
        ("ctx-size", "2048"),
        ("jinja", "true"),
        ("mlock", "false"),  # no negative flag: left out
        ("mmap", "false"),
        ("pin", "true"),  # router-only: never a worker flag
        ("webui", "false"),
    ]
    assert render_worker_args(options) == [
        "--chat-template",
        "chatml",
        "--ctx-size",
        "2048",
        "--jinja",
        "--no-mmap",
        "--no-webui",
    ]


def test_gpu_options_render_as_worker_flags() -> None:
    options = [("fit", "off"), ("fit-target", "512,2048"), ("kv-offload", "false")]
    assert render_worker_args(options) == [
        "--fit",
        "off",
        "--fit-target",
        "512,2048",
        "--no-kv-offload",
    ]
