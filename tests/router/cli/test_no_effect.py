"""The router's no-effect flags: derived from llama-server's flags table, each with a reason."""

from __future__ import annotations

import argparse

import pytest

from corral.options.llama_server_flags import LLAMA_SERVER_FLAGS
from router.cli.main import parse_serve_args
from router.cli.no_effect import (
    ALSO_SPELLED,
    NOT_LLAMA_SERVER_FLAGS,
    add_no_effect_flags,
    no_effect_flags,
    no_effect_reason,
)
from router.cli.no_effect_flags import NO_EFFECT_REASONS
from router.cli.serve_flags import serve_parser

_LLAMA_SPELLINGS = {s for flag in LLAMA_SERVER_FLAGS for s in flag.spellings}


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return serve_parser()


def test_every_no_effect_flag_says_why(parser: argparse.ArgumentParser) -> None:
    for flag in no_effect_flags(parser):
        # A new llama-server flag Corral does not implement needs its line in no_effect_flags.py.
        assert no_effect_reason(flag.spellings[0]), flag.spellings


def test_every_reason_is_a_no_effect_flags(parser: argparse.ArgumentParser) -> None:
    # A flag that comes to take effect (an option table row) takes its reason out with it.
    named = {flag.spellings[0] for flag in no_effect_flags(parser)}
    assert set(NO_EFFECT_REASONS) - named == set()
    assert set(ALSO_SPELLED) - named == set()


def test_a_flag_has_one_reason_at_most(parser: argparse.ArgumentParser) -> None:
    for flag in no_effect_flags(parser):
        assert len([s for s in flag.spellings if s in NO_EFFECT_REASONS]) <= 1, flag.spellings


def test_the_spellings_added_by_hand_are_not_llama_servers() -> None:
    # Once the flags table has them, they are derived like the others and their lines go.
    added = {s for spellings in ALSO_SPELLED.values() for s in spellings}
    added |= {s for spellings, _ in NOT_LLAMA_SERVER_FLAGS for s in spellings}
    assert added & _LLAMA_SPELLINGS == set()


def test_a_flag_the_parser_implements_is_no_no_effect_flag() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads-http", type=int)  # as an option table row would
    add_no_effect_flags(parser)
    named = {flag.spellings[0] for flag in no_effect_flags(parser)}
    assert "--threads-http" not in named
    assert "--poll" in named
    assert parser.parse_args(["--threads-http", "4"]).threads_http == 4


def test_every_llama_server_flag_is_implemented_or_has_no_effect(
    parser: argparse.ArgumentParser,
) -> None:
    noted = {s for flag in no_effect_flags(parser) for s in flag.spellings}
    for flag in LLAMA_SERVER_FLAGS:
        # All of a flag's spellings one way or the other: a partly implemented flag fails.
        assert {s in noted for s in flag.spellings} in ({True}, {False}), flag.spellings
        assert all(s in parser._option_string_actions for s in flag.spellings), flag.spellings


def test_a_negative_flag_is_noted_by_its_own_spelling() -> None:
    settings = parse_serve_args(["--no-perf", "-nocb", "--perf", "--no-cont-batching"])
    assert settings.no_effect_flags == ("--no-perf", "-nocb", "--perf")


def test_the_notice_names_a_flag_by_its_reasons_spelling() -> None:
    # arg.cpp spells them -bs first; the reasons and the notices say the long names.
    settings = parse_serve_args(["--backend_sampling", "-Crbd", "0-1"])
    assert settings.no_effect_flags == (
        "--backend-sampling",
        "--spec-draft-cpu-range-batch",
    )
