"""Preset keys derived from llama-server's flags table, as common/preset.cpp maps them."""

from __future__ import annotations

from router.catalogue.llama_server_keys import LLAMA_SERVER_KEYS, LLAMA_SERVER_SAMPLING_KEYS


def test_a_flags_spellings_and_variables_are_keys() -> None:
    # -c --ctx-size [LLAMA_ARG_CTX_SIZE]; --perf / --no-perf [LLAMA_ARG_PERF] has a NO_ variant.
    assert {"c", "ctx-size", "LLAMA_ARG_CTX_SIZE"} <= LLAMA_SERVER_KEYS
    assert {"perf", "no-perf", "LLAMA_ARG_PERF", "LLAMA_ARG_NO_PERF"} <= LLAMA_SERVER_KEYS
    assert "LLAMA_ARG_NO_CTX_SIZE" not in LLAMA_SERVER_KEYS  # no negative flag, no NO_ variant
    # A variable outside LLAMA_ARG_* is a key as it is.
    assert {"HF_TOKEN", "LLAMA_API_KEY"} <= LLAMA_SERVER_KEYS


def test_the_sampling_keys_are_the_sampling_options() -> None:
    assert {"temp", "temperature", "LLAMA_ARG_TEMPERATURE", "top-k"} <= LLAMA_SERVER_SAMPLING_KEYS
    assert "ctx-size" not in LLAMA_SERVER_SAMPLING_KEYS
    assert LLAMA_SERVER_SAMPLING_KEYS < LLAMA_SERVER_KEYS
