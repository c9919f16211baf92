"""Directory walks and glob patterns of ``file_glob_search`` / ``grep_search``."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.tools.file_listing import GlobPattern, list_entries


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.cpp", "src/deep/main.cpp", True),  # no '/': the base name at any depth
        ("*.cpp", "main.h", False),
        ("src/*.cpp", "src/main.cpp", True),  # auto-anchored with **/
        ("src/*.cpp", "a/src/main.cpp", True),
        ("src/*.cpp", "src/deep/main.cpp", False),
        ("src/**/*.cpp", "src/deep/er/main.cpp", True),
        ("/src/*.cpp", "a/src/main.cpp", False),  # a leading '/' anchors at the base
        ("**", "anything/at/all", True),
        ("file?.txt", "file1.txt", True),
        ("file[!0-9].txt", "file1.txt", False),
        ("*proj*", "project-alpha", True),
    ],
)
def test_glob_patterns_match_as_llama_servers(pattern: str, path: str, matches: bool) -> None:
    assert GlobPattern.compile(pattern).matches(path) is matches


def test_junk_directories_are_listed_but_never_walked(tmp_path: Path) -> None:
    (tmp_path / "node_modules" / "pkg").mkdir(parents=True)
    (tmp_path / "node_modules" / "pkg" / "index.js").write_text("x")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("x")
    listing = list_entries(tmp_path, 0, "all")
    rels = {entry.rel for entry in listing.entries}
    assert rels == {"node_modules", "src", "src/main.py"}
    assert not listing.truncated


def test_symlinked_directories_are_not_walked(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    base = tmp_path / "base"
    base.mkdir()
    (base / "loop").symlink_to(base)
    (base / "out").symlink_to(outside)
    (base / "a.txt").write_text("x")
    rels = {entry.rel for entry in list_entries(base, 0, "file").entries}
    assert rels == {"a.txt"}


def test_max_depth_limits_the_walk(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    for rel in ("top.txt", "a/mid.txt", "a/b/deep.txt"):
        (tmp_path / rel).write_text("x")
    by_depth = {
        depth: {entry.rel for entry in list_entries(tmp_path, depth, "file").entries}
        for depth in (0, 1, 2)
    }
    assert by_depth == {
        0: {"top.txt", "a/mid.txt", "a/b/deep.txt"},
        1: {"top.txt"},
        2: {"top.txt", "a/mid.txt"},
    }
