"""llama-server's model shortcuts: the same hub model and settings, at their place in the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.hub.cache_scan import resolve_cached_model, scan_cache
from router.cli.main import parse_serve_args
from tests.support.files.hub_cache import add_snapshot


def test_a_shortcut_serves_its_hub_model_with_llama_servers_settings() -> None:
    settings = parse_serve_args(["--gpt-oss-20b-default"])
    assert settings.hf_repos == ("ggml-org/gpt-oss-20b-GGUF:MXFP4",)
    assert settings.single_model
    assert settings.port == 8013
    options = settings.model_options
    assert (options["ctx-size"], options["parallel"], options["jinja"]) == ("262144", "2", "true")
    assert (options["ubatch-size"], options["batch-size"], options["temp"]) == (
        "2048",
        "32768",
        "1",
    )


def test_the_spec_shortcuts_name_the_draft_model_too() -> None:
    settings = parse_serve_args(["--fim-qwen-7b-spec"])
    assert settings.hf_repos == ("ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF:Q8_0",)
    assert settings.model_options["spec-draft-hf"] == "ggml-org/Qwen2.5-Coder-0.5B-Q8_0-GGUF:Q8_0"
    assert settings.port == 8012


@pytest.mark.parametrize(
    ("argv", "port", "ctx"),
    [
        (["--embd-gemma-default", "--port", "9000", "-c", "4096"], 9000, "4096"),
        (["--port", "9000", "-c", "4096", "--embd-gemma-default"], 8011, "65536"),
    ],
)
def test_a_flag_after_the_shortcut_beats_it_one_before_does_not(
    argv: list[str], port: int, ctx: str
) -> None:
    settings = parse_serve_args(argv)
    assert (settings.port, settings.model_options["ctx-size"]) == (port, ctx)
    assert settings.model_options["embeddings"] == "true"


@pytest.mark.parametrize(
    ("flag", "repo", "wanted", "other"),
    [
        (
            "--gpt-oss-20b-default",
            "ggml-org/gpt-oss-20b-GGUF",
            "gpt-oss-20b-mxfp4.gguf",
            "gpt-oss-20b-Q4_K_M.gguf",
        ),
        (
            "--embd-gemma-default",
            "ggml-org/embeddinggemma-300M-qat-q4_0-GGUF",
            "embeddinggemma-300M-qat-Q4_0.gguf",
            "embeddinggemma-300M-Q8_0.gguf",
        ),
        (
            "--fim-qwen-7b-default",
            "ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF",
            "qwen2.5-coder-7b-q8_0.gguf",
            "qwen2.5-coder-7b-Q4_K_M.gguf",
        ),
    ],
)
def test_the_shortcut_resolves_to_the_file_llama_server_names(
    tmp_path: Path, flag: str, repo: str, wanted: str, other: str
) -> None:
    # Another quant beside it, which a plain -hf REPO would pick (Q4_K_M comes first).
    add_snapshot(tmp_path, repo, [other, wanted])
    (reference,) = parse_serve_args([flag]).hf_repos
    found = resolve_cached_model(scan_cache(tmp_path), reference)
    assert found is not None
    assert found.file == wanted
