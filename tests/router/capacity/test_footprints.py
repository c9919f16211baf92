"""Measured GPU footprints kept across router restarts (router/capacity/footprints.py): by the
model's files and options, in a file that may be missing, corrupt or foreign without harm.
Over real routers and workers on fake GPUs: tests/router/capacity/test_fake_gpus_e2e.py."""

from __future__ import annotations

import os
from pathlib import Path

from structlog.testing import capture_logs

from router.capacity.footprints import Footprints, footprint_key
from router.catalogue.catalogue import CatalogueEntry

M = 1 << 20


def _entry(tmp_path: Path, **options: str) -> CatalogueEntry:
    model = tmp_path / "alpha.gguf"
    if not model.exists():
        model.write_bytes(b"GGUF" + bytes(60))
    return CatalogueEntry(
        name="alpha", path=model, source="models_dir", options=tuple(sorted(options.items()))
    )


def test_a_footprint_outlives_its_router_and_only_grows(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "footprints.json"
    entry = _entry(tmp_path, **{"ctx-size": "512"})
    Footprints(path).note(entry, 300 * M)
    again = Footprints(path)  # the next router
    assert again.get(entry) == 300 * M
    again.note(entry, 200 * M)  # a run with less context: the most it took stays
    assert Footprints(path).get(entry) == 300 * M
    assert [p.name for p in path.parent.iterdir()] == ["footprints.json"]  # no temporary left


def test_other_settings_or_a_changed_file_are_another_model(tmp_path: Path) -> None:
    path = tmp_path / "footprints.json"
    entry = _entry(tmp_path, **{"ctx-size": "512"})
    Footprints(path).note(entry, 300 * M)
    assert Footprints(path).get(_entry(tmp_path, **{"ctx-size": "4096"})) == 0
    key = footprint_key(entry)
    os.utime(entry.path, ns=(1, 1))  # a new download of it
    assert footprint_key(entry) != key
    assert Footprints(path).get(entry) == 0


def test_a_corrupt_or_foreign_file_is_ignored_with_a_warning_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "footprints.json"
    entry = _entry(tmp_path)
    for text in ('{"gpu_bytes": {', '{"format": "something-else", "version": 1, "gpu_bytes": {}}'):
        path.write_text(text)
        with capture_logs() as logs:
            footprints = Footprints(path)
        assert footprints.get(entry) == 0
        assert [log["log_level"] for log in logs] == ["warning"]
        footprints.note(entry, 100 * M)
        assert Footprints(path).get(entry) == 100 * M


def test_a_folder_it_cannot_write_costs_a_warning_not_the_router(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    footprints = Footprints(blocked / "footprints.json")
    with capture_logs() as logs:
        footprints.note(_entry(tmp_path), 100 * M)
    assert footprints.get(_entry(tmp_path)) == 100 * M  # still known to this router
    assert [log["event"] for log in logs] == ["measured footprints not saved"]
