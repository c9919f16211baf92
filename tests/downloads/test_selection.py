"""Which files make up a model: references, tags, shards and projectors."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from corral.hub.cache_scan import first_shards
from corral.hub.mmproj import best_mmproj
from corral.hub.names import InvalidReference, choose_tag, is_safe_repo_path, parse_reference
from corral.hub.shards import shards_of


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("ggml-org/gemma-3-1b-it-GGUF", ("ggml-org/gemma-3-1b-it-GGUF", None)),
        ("acme/tiny-GGUF:q4_k_m", ("acme/tiny-GGUF", "Q4_K_M")),
        ("acme/tiny-GGUF:UD-Q4_K_XL", ("acme/tiny-GGUF", "Q4_K_XL")),
        ("  acme/tiny.v2:Q8_0 ", ("acme/tiny.v2", "Q8_0")),
    ],
)
def test_references_parse(reference: str, expected: tuple[str, str | None]) -> None:
    assert parse_reference(reference) == expected


@pytest.mark.parametrize(
    "reference",
    ["", "tiny", "a/b/c", "acme/tiny:", "../etc/passwd", "acme/..", "acme/ti ny", "acme/x:Q4/../a"],
)
def test_malformed_references_are_refused(reference: str) -> None:
    with pytest.raises(InvalidReference, match="invalid model"):
        parse_reference(reference)


@pytest.mark.parametrize(
    ("available", "requested", "expected"),
    [
        (["Q8_0", "Q4_K_M", "F16"], "Q8_0", "Q8_0"),
        (["Q8_0", "Q4_K_M", "F16"], None, "Q4_K_M"),
        (["F16", "Q8_0"], None, "Q8_0"),
        (["Q5_K_S", "F16"], None, "Q5_K_S"),
        (["Q8_0"], "Q2_K", None),
        ([], None, None),
    ],
)
def test_tag_choice_follows_upstream(
    available: list[str], requested: str | None, expected: str | None
) -> None:
    assert choose_tag(available, requested) == expected


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


def test_every_shard_of_a_split_model() -> None:
    first = PurePosixPath("big/m-Q8_0-00001-of-00003.gguf")
    assert [p.name for p in shards_of(first)] == [
        "m-Q8_0-00001-of-00003.gguf",
        "m-Q8_0-00002-of-00003.gguf",
        "m-Q8_0-00003-of-00003.gguf",
    ]
    assert shards_of(PurePosixPath("m-Q8_0.gguf")) == [PurePosixPath("m-Q8_0.gguf")]


def test_projector_is_the_nearest_then_the_closest_quantisation() -> None:
    paths = [
        PurePosixPath(p)
        for p in ("mmproj-F16.gguf", "sub/mmproj-F32.gguf", "sub/mmproj-Q8_0.gguf", "x/mmproj.gguf")
    ]
    assert best_mmproj(PurePosixPath("sub/m-Q8_0.gguf"), "Q8_0", paths) == PurePosixPath(
        "sub/mmproj-Q8_0.gguf"
    )
    assert best_mmproj(PurePosixPath("m-Q4_K_M.gguf"), "Q4_K_M", paths) == PurePosixPath(
        "mmproj-F16.gguf"
    )
    assert best_mmproj(PurePosixPath("m-Q4_K_M.gguf"), "Q4_K_M", paths[1:]) is None


@pytest.mark.parametrize(
    ("path", "safe"),
    [
        ("m-Q8_0.gguf", True),
        ("sub/dir/m-Q8_0.gguf", True),
        ("../m.gguf", False),
        ("sub/../../m.gguf", False),
        ("/etc/passwd", False),
        ("a//b", False),
        ("", False),
    ],
)
def test_hub_paths_are_checked_before_becoming_paths(path: str, safe: bool) -> None:
    assert is_safe_repo_path(path) is safe
