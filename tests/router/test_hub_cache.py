"""Finding and naming models in a (fake) Hugging Face hub cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corral.hub.cache_layout import locate_cache_dir
from corral.hub.cache_scan import CachedModel, resolve_cached_model, scan_cache
from corral.hub.names import canonical_tag, is_valid_repo_id
from corral.hub.shards import split_gguf_name

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


def add_snapshot(
    cache: Path, repo: str, files: list[str], *, commit: str = COMMIT_A, ref: str | None = "main"
) -> Path:
    """Lay out a repo the way huggingface_hub does: blobs, snapshot symlinks, refs/<ref>."""
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    for index, file in enumerate(files):
        blob = repo_dir / "blobs" / f"{commit[:8]}{index:032x}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(b"GGUF")
        link = snapshot / file
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if ref is not None:
        (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
        (repo_dir / "refs" / ref).write_text(commit)
    return snapshot


def names(models: list[CachedModel]) -> list[str]:
    return [model.name for model in models]


# --- where the cache is -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"LLAMA_CACHE": "/l", "HF_HUB_CACHE": "/h", "HF_HOME": "/home", "HOME": "/u"},
            "/l",
        ),
        ({"HF_HUB_CACHE": "/h", "HUGGINGFACE_HUB_CACHE": "/old", "HF_HOME": "/hh"}, "/h"),
        ({"HUGGINGFACE_HUB_CACHE": "/old", "HF_HOME": "/hh"}, "/old"),
        ({"HF_HOME": "/hh", "XDG_CACHE_HOME": "/x"}, "/hh/hub"),
        ({"XDG_CACHE_HOME": "/x", "HOME": "/u"}, "/x/huggingface/hub"),
        ({"HOME": "/u"}, "/u/.cache/huggingface/hub"),
        ({"LLAMA_CACHE": "", "HF_HOME": "/hh"}, "/hh/hub"),  # empty counts as unset
    ],
)
def test_cache_dir_precedence(env: dict[str, str], expected: str) -> None:
    assert locate_cache_dir(env) == Path(expected)


def test_cache_dir_without_any_variable_is_under_the_home_directory() -> None:
    assert locate_cache_dir({}) == Path.home() / ".cache" / "huggingface" / "hub"


# --- names and tags -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        ("tinygemma3-Q8_0.gguf", ("tinygemma3-Q8_0", 1, "Q8_0")),
        ("model.q4_k_m.gguf", ("model.q4_k_m", 1, "Q4_K_M")),
        ("Llama-UD-Q4_K_XL-00002-of-00003.gguf", ("Llama-UD-Q4_K_XL", 2, "Q4_K_XL")),
        ("m-bf16.gguf", ("m-bf16", 1, "BF16")),
        ("m-IQ4_XS.gguf", ("m-IQ4_XS", 1, "IQ4_XS")),
        ("m-F16.gguf", ("m-F16", 1, "F16")),
        ("m-mxfp4.gguf", ("m-mxfp4", 1, "MXFP4")),
        ("stories260K.gguf", ("stories260K", 1, None)),  # no separator, no tag
        ("gemma-3-1b-it.gguf", ("gemma-3-1b-it", 1, None)),  # a token, but not a quant
    ],
)
def test_split_gguf_name(file_name: str, expected: tuple[str, int, str | None]) -> None:
    assert split_gguf_name(file_name) == expected


@pytest.mark.parametrize(
    ("tag", "expected"),
    [("q8_0", "Q8_0"), ("UD-Q4_K_XL", "Q4_K_XL"), ("model.f16", "F16"), ("Q4", "Q4")],
)
def test_canonical_tag(tag: str, expected: str) -> None:
    assert canonical_tag(tag) == expected


@pytest.mark.parametrize(
    ("repo_id", "valid"),
    [
        ("ggml-org/tinygemma3-GGUF", True),
        ("org/repo.v1_2", True),
        ("org", False),
        ("org/repo/extra", False),
        ("org//repo", False),
        ("org/-repo", False),
        ("org/repo-", False),
        ("org/re po", False),
        ("../etc", False),
        ("o/" + "r" * 300, False),
    ],
)
def test_repo_id_validation(repo_id: str, valid: bool) -> None:
    assert is_valid_repo_id(repo_id) is valid


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


def test_companion_files_are_not_models(tmp_path: Path) -> None:
    add_snapshot(
        tmp_path,
        "org/repo",
        [
            "mmproj-model-Q8_0.gguf",
            "model-draft-Q4_0.gguf",
            "mtp-model-Q4_0.gguf",
            "imatrix-Q4_0.gguf",
            "model-Q4_0.gguf",
        ],
    )
    assert names(scan_cache(tmp_path)) == ["org/repo:Q4_0"]


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
