"""Flags are taken only as spelled, by ``corral serve`` and ``python -m worker`` alike."""

from __future__ import annotations

import pytest

from corral.options.table import normalise_options, render_worker_args
from router.cli.main import parse_serve_args
from worker.settings.parse import parse_worker_args


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
    settings = parse_serve_args(["-c", "2048", "-lv", "4", "-ncmoed", "2"])
    assert settings.model_options["ctx-size"] == "2048"
    assert settings.model_options["spec-draft-n-cpu-moe"] == "2"
    assert settings.log_verbosity == 4  # the router's console log level (corral.logs)
    assert settings.no_effect_flags == ()


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


def test_every_reverse_prompt_reaches_the_worker_whole() -> None:
    # As llama-server's -r, each one is kept, commas included: from `corral serve`'s flags, or a
    # preset's JSON array, through the rendered worker flags to the worker's stop strings.
    flags = ["-r", "User, then", "--reverse-prompt", ";", "-l", "5+1", "-l", "6-2"]
    serve = parse_serve_args(flags)
    preset = normalise_options([("reverse-prompt", '["User, then", ";"]')], where="preset")
    assert serve.model_options["reverse-prompt"] == preset["reverse-prompt"]
    worker = parse_worker_args(["-m", "m.gguf", *render_worker_args(serve.model_options.items())])
    assert worker.reverse_prompt == ("User, then", ";")
    assert worker.sampling.logit_bias == {5: 1.0, 6: -2.0}
    # One string in a preset is one stop string, whatever it holds.
    single = normalise_options([("reverse-prompt", "a, b")], where="preset")
    assert parse_worker_args(["-m", "m", *render_worker_args(single.items())]).reverse_prompt == (
        "a, b",
    )
