"""Model references, tags, repository ids and paths inside a repository."""

from __future__ import annotations

import pytest

from corral.hub.names import (
    InvalidReference,
    canonical_tag,
    choose_tag,
    is_safe_repo_path,
    is_valid_repo_id,
    parse_reference,
)


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
