"""Scanning ``--models-dir`` and ``-m`` files into catalogue entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.catalogue import CatalogueError, scan_catalogue


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF")
    return path


def test_models_dir_files_and_subdirectories(tmp_path: Path) -> None:
    _touch(tmp_path / "alpha.gguf")
    _touch(tmp_path / "notes.txt")
    _touch(tmp_path / "mmproj-alpha.gguf")
    big = tmp_path / "big"
    _touch(big / "big-00002-of-00002.gguf")
    first = _touch(big / "big-00001-of-00002.gguf")
    _touch(big / "mmproj-big-f16.gguf")
    _touch(tmp_path / "empty" / "readme.md")

    catalogue = scan_catalogue(tmp_path, [])
    assert sorted(catalogue) == ["alpha", "big"]
    assert catalogue["alpha"].path == tmp_path / "alpha.gguf"
    assert catalogue["big"].path == first
    assert {entry.source for entry in catalogue.values()} == {"models_dir"}


def test_model_files_are_named_by_stem(tmp_path: Path) -> None:
    model = _touch(tmp_path / "elsewhere" / "solo.gguf")
    catalogue = scan_catalogue(None, [model])
    assert list(catalogue) == ["solo"]
    assert catalogue["solo"].path == model.resolve()


def test_same_name_from_two_paths_is_an_error(tmp_path: Path) -> None:
    _touch(tmp_path / "dir" / "twin.gguf")
    other = _touch(tmp_path / "other" / "twin.gguf")
    with pytest.raises(CatalogueError, match="twin"):
        scan_catalogue(tmp_path / "dir", [other])


def test_same_file_twice_is_one_model(tmp_path: Path) -> None:
    model = _touch(tmp_path / "dir" / "once.gguf")
    assert list(scan_catalogue(tmp_path / "dir", [model])) == ["once"]
