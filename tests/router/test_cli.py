"""``corral serve``'s flags and their ``LLAMA_ARG_*`` variables, read as llama-server reads them."""

from __future__ import annotations

import os

import pytest

from router.cli import parse_serve_args


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
