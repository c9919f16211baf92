"""``corral serve``'s flags and their ``LLAMA_ARG_*`` variables, read as llama-server reads them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from router.cli.main import parse_serve_args


@pytest.fixture(autouse=True)
def _no_inherited_llama_args(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LLAMA_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("variables", "argv", "expected"),
    [
        ({}, [], None),
        ({"LLAMA_ARG_MMAP": "0"}, [], "false"),
        ({"LLAMA_ARG_MMAP": "1"}, [], "true"),
        # Upstream: the NO_ variable means "off" whatever its value, and beats the positive one.
        ({"LLAMA_ARG_NO_MMAP": "1"}, [], "false"),
        ({"LLAMA_ARG_NO_MMAP": "0"}, [], "false"),
        ({"LLAMA_ARG_NO_MMAP": "", "LLAMA_ARG_MMAP": "1"}, [], "false"),
        ({"LLAMA_ARG_NO_MMAP": "1"}, ["--mmap"], "true"),  # a flag beats any variable
    ],
)
def test_negative_variables_turn_a_model_option_off(
    monkeypatch: pytest.MonkeyPatch,
    variables: dict[str, str],
    argv: list[str],
    expected: str | None,
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert parse_serve_args(argv).model_options.get("mmap") == expected


def test_every_negative_variable_of_the_option_table_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LLAMA_ARG_NO_JINJA", "yes")
    assert parse_serve_args([]).model_options["jinja"] == "false"


@pytest.mark.parametrize(
    ("variables", "argv", "expected"),
    [
        ({}, [], True),
        ({"LLAMA_ARG_MODELS_AUTOLOAD": "0"}, [], False),
        ({"LLAMA_ARG_NO_MODELS_AUTOLOAD": "0"}, [], False),
        ({"LLAMA_ARG_NO_MODELS_AUTOLOAD": "1", "LLAMA_ARG_MODELS_AUTOLOAD": "1"}, [], False),
        ({"LLAMA_ARG_NO_MODELS_AUTOLOAD": "1"}, ["--models-autoload"], True),
    ],
)
def test_models_autoload_follows_upstream_variables(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], argv: list[str], expected: bool
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert parse_serve_args(argv).models_autoload is expected


def test_models_memory_max_takes_a_size_from_the_flag_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert parse_serve_args([]).models_memory_max == 0  # no limit
    assert parse_serve_args(["--models-memory-max", "24G"]).models_memory_max == 24 << 30
    monkeypatch.setenv("CORRAL_MODELS_MEMORY_MAX", "512M")
    assert parse_serve_args([]).models_memory_max == 512 << 20
    assert parse_serve_args(["--models-memory-max", "1G"]).models_memory_max == 1 << 30


def test_a_bad_memory_size_stops_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_serve_args(["--models-memory-max", "lots"])
    assert stopped.value.code == 2
    assert "--models-memory-max: expected a size such as 512M or 8G" in capsys.readouterr().err


def test_fault_limits_have_defaults_and_take_flags() -> None:
    settings = parse_serve_args([])
    assert (settings.stall_timeout, settings.load_timeout, settings.max_queue) == (60, 600, 512)
    settings = parse_serve_args(
        ["--stall-timeout", "0", "--load-timeout", "30", "--max-queue", "8"]
    )
    assert (settings.stall_timeout, settings.load_timeout, settings.max_queue) == (0, 30, 8)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--stall-timeout", "-1"], "--stall-timeout must be 0 (never) or a number of seconds"),
        (["--load-timeout", "-5"], "--load-timeout must be 0 (never) or a number of seconds"),
        (["--max-queue", "-1"], "--max-queue must be 0 (no limit) or a number of requests"),
        (
            ["--schedule-keep-idle", "-1"],
            "--schedule-keep-idle must be 0 (given up at once) or a number of seconds",
        ),
    ],
)
def test_negative_fault_limits_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_serve_args(argv)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "single"),
    [
        ([], True),
        (["--models-dir", "{dir}"], False),
        (["-m", "{file}"], False),
        (["-hf", "org/repo"], False),
    ],
)
def test_single_model_mode_is_one_model_without_dir_or_preset(
    tmp_path: Path, extra: list[str], single: bool
) -> None:
    model = tmp_path / "one.gguf"
    model.write_bytes(b"")
    argv = ["-m", str(model), *(a.format(dir=tmp_path, file=model) for a in extra)]
    settings = parse_serve_args([*argv, "--alias", "a, b", "--tags", "x"])
    assert settings.single_model is single
    # Outside single-model mode the flags do nothing, and say so instead of stopping startup.
    assert ("--alias" in settings.no_effect_flags) is not single


def test_alias_and_tags_come_from_llama_arg_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_ARG_ALIAS", "named")
    monkeypatch.setenv("LLAMA_ARG_TAGS", "t")
    settings = parse_serve_args(["-hf", "org/repo:Q8_0"])
    assert (settings.single_model, settings.aliases, settings.tags) == (True, ("named",), ("t",))


def test_no_effect_flags_consume_their_values_and_are_noted_once() -> None:
    settings = parse_serve_args(
        ["--poll", "50", "-lv", "5", "--threads-http", "4", "--no-perf", "-c", "256"]
    )
    assert settings.no_effect_flags == ("--poll", "--threads-http", "--no-perf")
    assert settings.log_verbosity == 5  # -lv takes effect (docs/operations.md, "Logs")
    assert settings.model_options["ctx-size"] == "256"  # read after them, not swallowed


def test_verbose_is_a_model_option() -> None:
    settings = parse_serve_args(["-v", "-c", "256"])
    assert settings.model_options["verbose"] == "true"
    assert settings.no_effect_flags == ()
