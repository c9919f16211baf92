"""Companion files (projectors, importance matrices, draft and MTP heads) are never models.

The rule is one list, ``corral.hub.companions.COMPANION_MARKERS``; each source that lists models
must apply all of it. One case per marker per source: ``--models-dir`` once missed ``imatrix``
and ``eagle3-`` while the hub cache listing caught them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.hub.cache_scan import scan_cache
from corral.hub.companions import COMPANION_MARKERS, is_companion
from router.catalogue.catalogue import CatalogueSources, build_catalogue
from tests.support.files.hub_cache import add_snapshot

# A file name as it is found in the wild for each marker. Its tag (Q8_0) differs from the real
# model's (Q4_0), so a companion taken for a model shows up as a second entry.
COMPANION_FILES = {
    "mmproj": "mmproj-model-Q8_0.gguf",
    "imatrix": "imatrix-model-Q8_0.gguf",
    "draft": "model-draft-Q8_0.gguf",
    "mtp-": "mtp-model-Q8_0.gguf",
    "eagle3-": "EAGLE3-model-Q8_0.gguf",  # markers match in any letter case
    "dflash-": "dflash-model-Q8_0.gguf",
    "dspark-": "dspark-model-Q8_0.gguf",
}
MODEL = "model-Q4_0.gguf"


def test_every_marker_has_a_case() -> None:
    assert set(COMPANION_FILES) == set(COMPANION_MARKERS)
    for marker, file_name in COMPANION_FILES.items():
        assert marker in file_name.lower()
        assert is_companion(file_name)
    assert not is_companion(MODEL)


@pytest.mark.parametrize("marker", COMPANION_MARKERS)
def test_models_dir_lists_no_companion(tmp_path: Path, marker: str) -> None:
    companion = COMPANION_FILES[marker]
    # Beside a model at the top level, and alone in a folder of its own.
    for path in (tmp_path / MODEL, tmp_path / companion, tmp_path / "alone" / companion):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"GGUF")

    catalogue = build_catalogue(
        CatalogueSources(
            models_dir=tmp_path, model_files=[], preset_file=None, cache_dir=None, cli_options={}
        )
    )

    assert {name: entry.path for name, entry in catalogue.entries.items()} == {
        "model-Q4_0": tmp_path / MODEL
    }


@pytest.mark.parametrize("marker", COMPANION_MARKERS)
def test_hub_cache_lists_no_companion(tmp_path: Path, marker: str) -> None:
    snapshot = add_snapshot(tmp_path, "org/repo", [COMPANION_FILES[marker], MODEL])

    assert {model.name: model.path for model in scan_cache(tmp_path)} == {
        "org/repo:Q4_0": snapshot / MODEL
    }
