"""Every worker option fills a setting (or says why not), every setting is filled by something.

The worker's settings are a loop over the option rows (each ``dest``) plus the named
derivations; these tests fail when a row or a field falls between them.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from corral.options.flags import WORKER_OPTIONS
from corral.options.model_options import ModelOptions
from corral.options.table import OPTIONS
from worker.settings.derived import DERIVATIONS, Derivation, Given
from worker.settings.parse import parse_worker_args
from worker.settings.worker_settings import WorkerSettings

_BUILT = WorkerSettings(model=Path("m.gguf"), alias="m")
# The settings groups whose fields rows fill by a dotted dest ("gpu.split_mode"): each of their
# fields is counted as one setting.
_GROUPS = {spec.dest.partition(".")[0] for spec in WORKER_OPTIONS if spec.dest and "." in spec.dest}
_FIELDS = {field.name for field in fields(WorkerSettings)} - _GROUPS
_FIELDS |= {f"{g}.{field.name}" for g in _GROUPS for field in fields(getattr(_BUILT, g))}


def _setting(settings: WorkerSettings, dest: str) -> Any:
    """A field, or a group's field by its dotted name."""
    for name in dest.split("."):
        settings = getattr(settings, name)
    return settings


def _given() -> Given:
    args = argparse.Namespace(
        model=Path("m.gguf"),
        alias=None,
        tags=None,
        api_key=None,
        cors_origins="*",
        allowed_hosts="",
        host="127.0.0.1",
        port=0,
        mmproj=None,
    )
    return Given(ModelOptions(), args, argparse.ArgumentParser())


def _filled_by(derivation: Derivation) -> set[str]:
    return set(derivation.derive(_given()))


def test_every_worker_option_fills_a_setting_or_says_why_it_has_no_effect() -> None:
    read = {name for derivation in DERIVATIONS for name in derivation.reads}
    idle = [
        spec.name
        for spec in WORKER_OPTIONS
        if spec.dest is None and spec.name not in read and spec.no_effect is None
    ]
    assert not idle, f"worker options with no dest, no derivation and no reason: {idle}"


def test_only_worker_options_fill_worker_settings() -> None:
    assert [spec.name for spec in OPTIONS if spec.role != "worker" and spec.dest] == []
    assert [spec.name for spec in OPTIONS if spec.role != "worker" and spec.no_effect] == []


def test_every_setting_is_filled_once_by_a_row_or_a_derivation() -> None:
    by: dict[str, list[str]] = {}
    for spec in WORKER_OPTIONS:
        if spec.dest is not None:
            by.setdefault(spec.dest, []).append(f"row {spec.name}")
    for derivation in DERIVATIONS:
        for name in _filled_by(derivation):
            by.setdefault(name, []).append(f"derivation {derivation.name}")
    assert sorted(_FIELDS - set(by)) == [], "WorkerSettings fields nothing fills"
    assert sorted(set(by) - _FIELDS) == [], "filled, but not WorkerSettings fields"
    assert {name: who for name, who in by.items() if len(who) > 1} == {}, "filled twice"


@pytest.mark.parametrize("spec", [s for s in WORKER_OPTIONS if s.dest], ids=lambda s: s.name)
def test_a_rows_default_is_its_settings_default(spec: Any) -> None:
    # The field's own default (settings built without flags) is the row's, converted by kind.
    parsed = parse_worker_args(["-m", "m.gguf"])
    assert _setting(parsed, spec.dest) == _setting(_BUILT, spec.dest)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The option names read through ModelOptions while the test runs."""
    seen: list[str] = []
    text, contains = ModelOptions.text, ModelOptions.__contains__

    def recording_text(self: ModelOptions, name: str) -> str | None:
        seen.append(name)
        return text(self, name)

    def recording_contains(self: ModelOptions, name: str) -> bool:
        seen.append(name)
        return contains(self, name)

    monkeypatch.setattr(ModelOptions, "text", recording_text)
    monkeypatch.setattr(ModelOptions, "__contains__", recording_contains)
    return seen


@pytest.mark.parametrize("derivation", DERIVATIONS, ids=lambda d: d.name)
def test_a_derivation_reads_only_the_options_it_names(
    derivation: Derivation, reads: list[str]
) -> None:
    derivation.derive(_given())
    assert set(reads) <= set(derivation.reads)
