"""Finding and naming models in a (fake) Hugging Face hub cache, and resolving references."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from corral.hub.cache_scan import CachedModel, first_shards, resolve_cached_model, scan_cache
from tests.support.files.hub_cache import COMMIT_A, COMMIT_B, add_snapshot


def names(models: list[CachedModel]) -> list[str]:
    return [model.name for model in models]


# --- scanning -----------------------------------------------------------------------------------


def test_missing_cache_dir_is_empty(tmp_path: Path) -> None:
    assert scan_cache(tmp_path / "nowhere") == []


def test_models_are_named_org_repo_tag(tmp_path: Path) -> None:
    snapshot = add_snapshot(
        tmp_path,
        "ggml-org/tinygemma3-GGUF",
        [
            "tinygemma3-Q8_0.gguf",
            "tinygemma3-f16.gguf",
            "mmproj-tinygemma3.gguf",
            "README.md",
            "config.json",
        ],
    )
    add_snapshot(tmp_path, "ggml-org/stories", ["stories260K.gguf"])

    models = scan_cache(tmp_path)
    assert names(models) == ["ggml-org/tinygemma3-GGUF:F16", "ggml-org/tinygemma3-GGUF:Q8_0"]
    q8 = models[1]
    assert (q8.repo, q8.tag, q8.file) == (
        "ggml-org/tinygemma3-GGUF",
        "Q8_0",
        "tinygemma3-Q8_0.gguf",
    )
    # The snapshot path, not the blob: split shards are found by name next to it.
    assert q8.path == snapshot / "tinygemma3-Q8_0.gguf"
    assert q8.path.is_symlink()
    assert q8.mmproj == snapshot / "mmproj-tinygemma3.gguf"


def test_split_models_list_only_the_first_shard(tmp_path: Path) -> None:
    snapshot = add_snapshot(
        tmp_path,
        "org/big-GGUF",
        [
            "Q4_K_M/big-Q4_K_M-00001-of-00002.gguf",
            "Q4_K_M/big-Q4_K_M-00002-of-00002.gguf",
            "big-Q8_0-00002-of-00002.gguf",  # first shard missing: not a model
        ],
    )
    models = scan_cache(tmp_path)
    assert names(models) == ["org/big-GGUF:Q4_K_M"]
    assert models[0].path == snapshot / "Q4_K_M" / "big-Q4_K_M-00001-of-00002.gguf"
    assert models[0].file == "Q4_K_M/big-Q4_K_M-00001-of-00002.gguf"


def test_mmproj_closest_in_quantisation_and_directory(tmp_path: Path) -> None:
    snapshot = add_snapshot(
        tmp_path,
        "org/vision",
        [
            "model-Q4_K_M.gguf",
            "model-F16.gguf",
            "mmproj-F16.gguf",
            "mmproj-Q8_0.gguf",
            "sub/model-Q8_0.gguf",
            "sub/mmproj-BF16.gguf",
            "other/mmproj-Q8_0.gguf",  # not above sub/: never chosen for it
        ],
    )
    by_name = {model.name: model for model in scan_cache(tmp_path)}
    assert by_name["org/vision:Q4_K_M"].mmproj == snapshot / "mmproj-Q8_0.gguf"
    assert by_name["org/vision:F16"].mmproj == snapshot / "mmproj-F16.gguf"
    # Same directory beats a closer quantisation higher up.
    assert by_name["org/vision:Q8_0"].mmproj == snapshot / "sub" / "mmproj-BF16.gguf"


def test_a_tag_found_twice_keeps_the_first_path(tmp_path: Path) -> None:
    snapshot = add_snapshot(tmp_path, "org/repo", ["b/model-Q4_0.gguf", "a/model-Q4_0.gguf"])
    [model] = scan_cache(tmp_path)
    assert model.path == snapshot / "a" / "model-Q4_0.gguf"


def test_refs_main_picks_the_snapshot(tmp_path: Path) -> None:
    add_snapshot(tmp_path, "org/repo", ["model-Q4_0.gguf"], commit=COMMIT_A)
    current = add_snapshot(tmp_path, "org/repo", ["model-Q8_0.gguf"], commit=COMMIT_B)
    os.utime(current, (1, 1))  # older on disk: refs/main wins anyway
    [model] = scan_cache(tmp_path)
    assert model.path == current / "model-Q8_0.gguf"


def test_without_refs_main_the_newest_snapshot_is_used(tmp_path: Path) -> None:
    old = add_snapshot(tmp_path, "org/repo", ["model-Q4_0.gguf"], commit=COMMIT_A, ref=None)
    new = add_snapshot(tmp_path, "org/repo", ["model-Q8_0.gguf"], commit=COMMIT_B, ref="dev")
    os.utime(old, (1, 1))
    os.utime(new, (2, 2))
    assert names(scan_cache(tmp_path)) == ["org/repo:Q8_0"]
    os.utime(old, (3, 3))
    assert names(scan_cache(tmp_path)) == ["org/repo:Q4_0"]


def test_a_ref_that_is_not_a_commit_is_not_followed(tmp_path: Path) -> None:
    add_snapshot(tmp_path, "org/repo", ["model-Q4_0.gguf"], commit=COMMIT_A, ref=None)
    outside = tmp_path / "models--org--repo" / "snapshots" / ".." / ".." / "evil"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "x-Q8_0.gguf").write_bytes(b"GGUF")
    refs = tmp_path / "models--org--repo" / "refs"
    refs.mkdir()
    (refs / "main").write_text("../../evil/sub")
    assert names(scan_cache(tmp_path)) == ["org/repo:Q4_0"]


def test_dangling_symlinks_and_bad_folders_are_skipped(tmp_path: Path) -> None:
    snapshot = add_snapshot(tmp_path, "org/repo", ["model-Q4_0.gguf", "model-Q8_0.gguf"])
    (snapshot / "model-Q8_0.gguf").resolve().unlink()  # blob gone, symlink left
    add_snapshot(tmp_path, "org/a/b", ["model-Q4_0.gguf"])  # models--org--a--b: two slashes
    (tmp_path / "datasets--org--data").mkdir()
    (tmp_path / "models--org--empty").mkdir()
    (tmp_path / "version.txt").write_text("1")
    assert names(scan_cache(tmp_path)) == ["org/repo:Q4_0"]


def test_first_shards_name_each_tag_once() -> None:
    paths = [
        PurePosixPath(p)
        for p in (
            "m-Q4_K_M-00002-of-00002.gguf",
            "m-Q4_K_M-00001-of-00002.gguf",
            "sub/m-Q8_0.gguf",
            "mmproj-m-F16.gguf",
            "m.gguf",  # no tag: never a cache model
            "README.md",
        )
    ]
    assert first_shards(paths) == {
        "Q4_K_M": PurePosixPath("m-Q4_K_M-00001-of-00002.gguf"),
        "Q8_0": PurePosixPath("sub/m-Q8_0.gguf"),
    }


# --- resolving references -----------------------------------------------------------------------


def test_resolve_by_tag_default_tag_and_file(tmp_path: Path) -> None:
    add_snapshot(tmp_path, "org/repo", ["m-Q2_K.gguf", "m-Q8_0.gguf", "m-Q4_K_M.gguf"])
    add_snapshot(tmp_path, "org/other", ["x-Q2_K.gguf"])
    models = scan_cache(tmp_path)

    def resolved(reference: str, hf_file: str | None = None) -> str | None:
        model = resolve_cached_model(models, reference, hf_file)
        return model.name if model else None

    assert resolved("org/repo:q8_0") == "org/repo:Q8_0"
    assert resolved("org/repo:UD-Q2_K") == "org/repo:Q2_K"
    assert resolved("org/repo") == "org/repo:Q4_K_M"
    assert resolved("org/other") == "org/other:Q2_K"  # neither default tag: the first
    assert resolved("org/repo", "m-Q2_K.gguf") == "org/repo:Q2_K"
    assert resolved("org/repo:F16") is None
    assert resolved("org/missing") is None
    assert resolved("org/repo", "nope.gguf") is None
