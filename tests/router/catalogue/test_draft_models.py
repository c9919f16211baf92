"""Draft models in the catalogue: model-draft paths and spec-draft-hf repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.catalogue.catalogue import Catalogue, CatalogueError, CatalogueSources, build_catalogue
from tests.support.files.hub_cache import add_snapshot


def _catalogue(
    tmp_path: Path, preset: str, *, cache: Path | None = None, cli: dict[str, str] | None = None
) -> Catalogue:
    (tmp_path / "models.ini").write_text(preset)
    return build_catalogue(
        CatalogueSources(
            models_dir=None,
            model_files=[],
            preset_file=tmp_path / "models.ini",
            cache_dir=cache,
            cli_options=cli or {},
        )
    )


def _gguf(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF")
    return path


@pytest.fixture
def hub(tmp_path: Path) -> Path:
    cache = tmp_path / "hub"
    add_snapshot(cache, "acme/big-GGUF", ["big-Q8_0.gguf"])
    add_snapshot(cache, "acme/small-GGUF", ["small-Q8_0.gguf", "small-Q4_K_M.gguf"])
    return cache


def test_a_relative_model_draft_is_relative_to_the_ini_file(tmp_path: Path) -> None:
    target, draft = _gguf(tmp_path / "big.gguf"), _gguf(tmp_path / "drafts" / "small.gguf")
    entry = _catalogue(tmp_path, f"[big]\nmodel = {target}\nmd = drafts/small.gguf\n").entries[
        "big"
    ]
    assert ("model-draft", str(draft)) in entry.options
    assert entry.worker_args() == ["--model-draft", str(draft)]
    assert entry.files() == [target, draft]  # checked and sized with the model


def test_a_missing_draft_file_is_an_error_naming_the_key(tmp_path: Path) -> None:
    target = _gguf(tmp_path / "big.gguf")
    missing = f"section \\[big\\]: key 'model-draft': no such file: {tmp_path}/nope.gguf"
    with pytest.raises(CatalogueError, match=missing):
        _catalogue(tmp_path, f"[big]\nmodel = {target}\nmodel-draft = nope.gguf\n")


def test_a_command_line_draft_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, draft = _gguf(tmp_path / "big.gguf"), _gguf(tmp_path / "work" / "small.gguf")
    monkeypatch.chdir(tmp_path / "work")
    catalogue = _catalogue(tmp_path, f"[big]\nmodel = {target}\n", cli={"md": "small.gguf"})
    assert ("model-draft", str(draft)) in catalogue.entries["big"].options


def test_spec_draft_hf_names_a_cached_model_and_model_draft_a_file_of_it(
    tmp_path: Path, hub: Path
) -> None:
    snapshot = hub / "models--acme--small-GGUF" / "snapshots" / ("a" * 40)
    preset = (
        "[by-tag]\nhf-repo = acme/big-GGUF:Q8_0\nhfd = acme/small-GGUF:Q4_K_M\n\n"
        "[by-file]\nhf-repo = acme/big-GGUF:Q8_0\nspec-draft-hf = acme/small-GGUF\n"
        "model-draft = small-Q8_0.gguf\n"
    )
    entries = _catalogue(tmp_path, preset, cache=hub).entries
    assert dict(entries["by-tag"].options) == {"model-draft": str(snapshot / "small-Q4_K_M.gguf")}
    assert dict(entries["by-file"].options) == {"model-draft": str(snapshot / "small-Q8_0.gguf")}


def test_a_draft_repository_missing_from_the_cache_is_an_error(tmp_path: Path, hub: Path) -> None:
    preset = "[big]\nhf-repo = acme/big-GGUF:Q8_0\nspec-draft-hf = acme/none-GGUF\n"
    with pytest.raises(
        CatalogueError, match="model 'big': key 'spec-draft-hf': 'acme/none-GGUF' is not in the hub"
    ):
        _catalogue(tmp_path, preset, cache=hub)


def test_dedup_cache_models_hides_the_drafts_cache_entry_too(tmp_path: Path, hub: Path) -> None:
    preset = (
        "[big]\nhf-repo = acme/big-GGUF:Q8_0\nhfd = acme/small-GGUF:Q4_K_M\n"
        "dedup-cache-models = true\n"
    )
    entries = _catalogue(tmp_path, preset, cache=hub).entries
    assert entries["acme/big-GGUF:Q8_0"].hidden
    assert entries["acme/small-GGUF:Q4_K_M"].hidden
    assert not entries["acme/small-GGUF:Q8_0"].hidden
    assert not entries["big"].hidden


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("spec-type = eagle", "key 'spec-type': expected some of none, draft-simple"),
        ("draft-max = -1", "key 'draft-max': expected a number of at least 0"),
        ("draft-p-min = much", "key 'draft-p-min': expected a number, got 'much'"),
    ],
)
def test_malformed_speculative_values_are_refused(tmp_path: Path, line: str, message: str) -> None:
    target = _gguf(tmp_path / "big.gguf")
    with pytest.raises(CatalogueError, match=message):
        _catalogue(tmp_path, f"[big]\nmodel = {target}\n{line}\n")
