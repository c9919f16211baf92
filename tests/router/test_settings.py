"""Every ``corral serve`` flag fills a setting (or exits), every setting is filled by something.

The router's settings are a loop over the flag rows (each ``dest``) plus the named derivations of
router/settings.py; these tests fail when a row or a field falls between them, and when a
field's default is not what parsing no flag gives.
"""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Any

import pytest

from router.cli.main import parse_serve_args
from router.cli.serve_flag import ServeFlag, flag_values
from router.cli.serve_flags import SERVE_FLAGS, serve_parser
from router.settings import DERIVATIONS, Derivation, Given, ServeSettings

_FIELDS = {field.name for field in fields(ServeSettings)}
# Filled once the router runs, not by a flag: the hub repository a remote preset came from.
_FILLED_AT_STARTUP = {"models_preset_repo"}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LLAMA_*/HF_*/CORRAL_* variables from the developer's shell."""
    for name in list(os.environ):
        if name.startswith(("LLAMA_", "HF_", "HUGGING", "CORRAL_", "OTEL_")):
            monkeypatch.delenv(name)


@pytest.fixture
def unset(clean_env: None) -> dict[str, Any]:
    """What the derivations get when no flag is given: each row's setting by dest."""
    return flag_values(serve_parser().parse_args([]), SERVE_FLAGS)


def _idle(flags: tuple[ServeFlag, ...]) -> list[str]:
    read = {name for derivation in DERIVATIONS for name in derivation.reads}
    return [
        flag.spellings[-1]
        for flag in flags
        if flag.dest not in _FIELDS and flag.dest not in read and not flag.exits
    ]


def test_every_row_fills_a_setting_is_read_by_a_derivation_or_exits() -> None:
    assert _idle(SERVE_FLAGS) == [], "flags that fill no setting, feed no derivation, do not exit"
    exiting = [flag.spellings[-1] for flag in SERVE_FLAGS if flag.exits and flag.dest in _FIELDS]
    assert not exiting, f"flags that exit but name a setting: {exiting}"


def test_a_row_that_fills_nothing_is_found() -> None:
    orphan = ServeFlag("server", ("--orphan",), "orphan", "fills nothing")
    assert _idle((*SERVE_FLAGS, orphan)) == ["--orphan"]


def test_every_row_is_one_flag() -> None:
    dests = [flag.dest for flag in SERVE_FLAGS]
    assert sorted({d for d in dests if dests.count(d) > 1}) == []
    assert all(flag.help for flag in SERVE_FLAGS), "a row without its help"


def test_every_setting_is_filled_once_by_a_row_or_a_derivation(unset: dict[str, Any]) -> None:
    by: dict[str, list[str]] = {}
    for flag in SERVE_FLAGS:
        if flag.dest in _FIELDS:
            by.setdefault(flag.dest, []).append(f"row {flag.spellings[-1]}")
    for derivation in DERIVATIONS:
        for name in derivation.derive(Given(dict(unset), {}, ())):
            # A derivation may refine the row it reads (the origins' default, the -m files).
            if name not in derivation.reads:
                by.setdefault(name, []).append(f"derivation {derivation.name}")
    for name in _FILLED_AT_STARTUP:
        by.setdefault(name, []).append("startup")
    assert sorted(_FIELDS - set(by)) == [], "ServeSettings fields nothing fills"
    assert sorted(set(by) - _FIELDS) == [], "filled, but not ServeSettings fields"
    assert {name: who for name, who in by.items() if len(who) > 1} == {}, "filled twice"


@pytest.mark.parametrize("name", sorted(_FIELDS - _FILLED_AT_STARTUP - {"cache_dir"}))
def test_a_settings_default_is_what_no_flag_gives(name: str, clean_env: None) -> None:
    # The field's own default (settings built without flags: tests, tools) is the row's.
    assert getattr(parse_serve_args([]), name) == getattr(ServeSettings(), name)


@pytest.mark.parametrize("derivation", DERIVATIONS, ids=lambda d: d.name)
def test_a_derivation_reads_only_the_rows_it_names(
    derivation: Derivation, unset: dict[str, Any]
) -> None:
    class Recording(dict[str, Any]):
        def __getitem__(self, name: str) -> Any:
            seen.add(name)
            return super().__getitem__(name)

    seen: set[str] = set()
    derivation.derive(Given(Recording(unset), {}, ()))
    assert seen <= set(derivation.reads)


@pytest.mark.parametrize(("flags", "courtesy"), [([], "true"), (["--schedule", "fifo"], "false")])
def test_every_model_has_the_courtesy_slot_with_swap_only(
    clean_env: None, flags: list[str], courtesy: str
) -> None:
    """docs/serving.md, "Scheduling": swap gives each worker its courtesy sequence below every
    preset's say; fifo never, as it hands a worker every request at once: its command line
    turns it off over any preset."""
    sources = parse_serve_args(flags).sources
    if courtesy == "true":
        assert sources.router_options == {"courtesy-slot": "true"}
        assert "courtesy-slot" not in sources.cli_options
    else:
        assert sources.router_options == {}
        assert sources.cli_options["courtesy-slot"] == "false"
