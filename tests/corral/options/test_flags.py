"""Flags are taken only as spelled, by ``corral serve`` and ``python -m worker`` alike."""

from __future__ import annotations

import pytest

from router.cli.main import parse_serve_args
from worker.settings import parse_worker_args


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        # argparse would read these as a known flag's prefix, or as one with its value glued on.
        (["--ctx-siz", "2048"], "--ctx-siz"),
        (["-c2048"], "-c2048"),
        (["-cmo"], "-cmo"),  # was "ambiguous (could match -c, -cmoed)"
        (["-lo"], "-lo"),  # was -lv, the log verbosity
        (["-ng", "1"], "-ng"),
    ],
)
def test_a_prefix_of_a_flag_is_refused_by_name(
    argv: list[str], refused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_serve_args(argv)
    serve_error = capsys.readouterr().err
    assert f"unrecognized arguments: {refused}" in serve_error
    assert "ambiguous" not in serve_error
    with pytest.raises(SystemExit):
        parse_worker_args(["-m", "m.gguf", *argv])
    assert "ambiguous" not in capsys.readouterr().err


def test_an_unknown_flag_still_gets_the_closest_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_serve_args(["--ctx-siz", "2048"])
    assert "did you mean --ctx-size?" in capsys.readouterr().err


def test_flags_are_taken_exactly_as_llama_server_spells_them() -> None:
    settings = parse_serve_args(["-c", "2048", "-lv", "3", "-cmoed"])
    assert settings.model_options["ctx-size"] == "2048"
    assert settings.no_effect_flags == ("--verbosity", "--spec-draft-cpu-moe")


def test_a_worker_notes_the_llama_server_flags_it_has_no_use_for() -> None:
    settings = parse_worker_args(
        ["-m", "m.gguf", "--threads-http", "4", "--models-dir", "d", "--reuse-port", "-c", "64"]
    )
    # Each took its value: -c is still read as the context size.
    assert settings.ctx_size == 64
    assert settings.no_effect_flags == ("--threads-http", "--models-dir", "--reuse-port")


def test_a_no_effect_flags_variable_is_noted_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMA_ARG_THREADS_HTTP", "8")
    monkeypatch.setenv("LLAMA_ARG_LOG_FILE", "x.log")
    settings = parse_serve_args(["--log-file", "y.log"])
    assert settings.no_effect_flags == (
        "--log-file",
        "--threads-http (LLAMA_ARG_THREADS_HTTP)",
    )
