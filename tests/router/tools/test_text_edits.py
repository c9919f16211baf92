"""``edit_file``'s replacements, against the cases llama-server's tests and code cover."""

from __future__ import annotations

import pytest

from router.tools.text_edits import EditRefused, TextEdit, apply_edits


def test_several_edits_are_matched_against_the_original() -> None:
    edits = [TextEdit("line2", "line2-edited"), TextEdit("line3\n", "line3\nline4\n")]
    assert apply_edits("line1\nline2\nline3\n", edits, "f") == "line1\nline2-edited\nline3\nline4\n"


def test_old_text_must_be_unique() -> None:
    with pytest.raises(EditRefused, match=r"found 2 occurrences of edits\[0\]\.old_text in f"):
        apply_edits("dup\ndup\n", [TextEdit("dup", "x")], "f")


def test_overlapping_edits_are_refused() -> None:
    edits = [TextEdit("line1\nline2", "a"), TextEdit("line2", "b")]
    with pytest.raises(EditRefused, match="overlap"):
        apply_edits("line1\nline2\n", edits, "f")


def test_missing_old_text_is_refused() -> None:
    with pytest.raises(EditRefused, match=r"could not find edits\[0\]\.old_text"):
        apply_edits("abc\n", [TextEdit("xyz", "q")], "f")


def test_an_edit_that_changes_nothing_is_refused() -> None:
    with pytest.raises(EditRefused, match="no changes made"):
        apply_edits("abc\n", [TextEdit("b", "b")], "f")


def test_smart_quotes_and_trailing_blanks_match_loosely_and_other_lines_stay_as_they_were() -> None:
    content = "keep \u201cthis\u201d   \nsay \u2018hi\u2019  \nend\n"
    result = apply_edits(content, [TextEdit("say 'hi'", "say 'bye'")], "f")
    # The edited line is rewritten from its normalised form; the others keep their bytes.
    assert result == "keep \u201cthis\u201d   \nsay 'bye'\nend\n"


def test_a_whitespace_only_duplicate_still_counts_as_a_duplicate() -> None:
    with pytest.raises(EditRefused, match="occurrences"):
        apply_edits("a b\na b  \n", [TextEdit("a b\n", "c\n")], "f")
