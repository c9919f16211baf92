"""Single-model mode's catalogue and routing, without processes."""

from __future__ import annotations

from pathlib import Path

from router.catalogue.catalogue import Catalogue, CatalogueEntry
from router.settings import ServeSettings
from router.single_model import single_model_catalogue, single_model_target


def _catalogue(tmp_path: Path) -> Catalogue:
    return Catalogue(
        {
            "one": CatalogueEntry("one", tmp_path / "one.gguf", "models_dir", tags=("old",)),
            "acme/x:Q8_0": CatalogueEntry("acme/x:Q8_0", tmp_path / "x.gguf", "cache"),
        }
    )


def _single(tmp_path: Path, **fields: object) -> ServeSettings:
    return ServeSettings(model_files=[tmp_path / "one.gguf"], single_model=True, **fields)  # type: ignore[arg-type]


def test_only_the_model_stays_renamed_by_its_first_alias(tmp_path: Path) -> None:
    settings = _single(tmp_path, aliases=("zed", "bee", "zed"), tags=("t",))
    catalogue = single_model_catalogue(_catalogue(tmp_path), settings)
    assert list(catalogue.entries) == ["bee"]
    entry = catalogue.entries["bee"]
    assert (entry.aliases, entry.tags, entry.path) == (
        ("one", "zed"),
        ("t",),
        tmp_path / "one.gguf",
    )


def test_without_aliases_the_name_and_tags_stay(tmp_path: Path) -> None:
    catalogue = single_model_catalogue(_catalogue(tmp_path), _single(tmp_path))
    assert [(e.name, e.aliases, e.tags) for e in catalogue.entries.values()] == [
        ("one", (), ("old",))
    ]


def test_any_name_or_none_is_the_one_model(tmp_path: Path) -> None:
    settings = _single(tmp_path, aliases=("bee",))
    catalogue = single_model_catalogue(_catalogue(tmp_path), settings)
    for name in (None, "", "gpt-3.5-turbo-instruct", "bee", "acme/x:Q8_0"):
        assert single_model_target(settings, catalogue, name) == "bee"
    assert single_model_target(settings, catalogue, "one") == "one"  # an alias resolves itself


def test_several_models_keep_names_as_given(tmp_path: Path) -> None:
    settings = ServeSettings(model_files=[tmp_path / "one.gguf"], aliases=("bee",))
    catalogue = single_model_catalogue(_catalogue(tmp_path), settings)
    assert list(catalogue.entries) == ["acme/x:Q8_0", "one"]
    for name in (None, "unknown", "one"):
        assert single_model_target(settings, catalogue, name) == name
