"""The tools root (docs/tools.md, Security): nothing outside it is reachable, however spelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.tools.confinement import OutsideRoot, ToolsRoot


@pytest.fixture
def layout(tmp_path: Path) -> tuple[ToolsRoot, Path]:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "inside.txt").write_text("in")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "link-out").symlink_to(outside)
    (root / "file-link-out").symlink_to(outside / "secret.txt")
    (root / "link-in").symlink_to(root / "sub")
    return ToolsRoot.at(root), outside


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "link-out/secret.txt",
        "file-link-out",
        "link-out/new-file.txt",  # a write through a linked directory
        "/etc/passwd",
        "~/.bashrc",
    ],
)
def test_paths_leading_out_of_the_root_are_refused(
    layout: tuple[ToolsRoot, Path], path: str
) -> None:
    root, _ = layout
    with pytest.raises(OutsideRoot, match="outside the tools root"):
        root.resolve(path, root.root)


def test_an_absolute_path_to_the_outside_is_refused_even_when_it_exists(
    layout: tuple[ToolsRoot, Path],
) -> None:
    root, outside = layout
    with pytest.raises(OutsideRoot):
        root.resolve(str(outside / "secret.txt"), root.root)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("sub/inside.txt", "sub/inside.txt"),
        ("sub/../sub/inside.txt", "sub/inside.txt"),
        ("link-in/inside.txt", "sub/inside.txt"),  # a link that stays inside is followed
        ("sub/not-yet.txt", "sub/not-yet.txt"),  # a file about to be written
        (".", ""),
    ],
)
def test_paths_inside_the_root_resolve_to_their_real_place(
    layout: tuple[ToolsRoot, Path], path: str, expected: str
) -> None:
    root, _ = layout
    assert root.resolve(path, root.root) == (root.root / expected if expected else root.root)


def test_an_absolute_path_inside_the_root_is_allowed(layout: tuple[ToolsRoot, Path]) -> None:
    root, _ = layout
    inside = root.root / "sub" / "inside.txt"
    assert root.resolve(str(inside), root.root) == inside


def test_relative_paths_resolve_against_the_working_directory(
    layout: tuple[ToolsRoot, Path],
) -> None:
    root, _ = layout
    cwd = root.working_dir("sub")
    assert root.resolve("inside.txt", cwd) == root.root / "sub" / "inside.txt"
    with pytest.raises(OutsideRoot):
        root.resolve("../../outside/secret.txt", cwd)


@pytest.mark.parametrize("cwd", ["..", "/", "link-out"])
def test_a_working_directory_outside_the_root_is_refused(
    layout: tuple[ToolsRoot, Path], cwd: str
) -> None:
    root, _ = layout
    with pytest.raises(OutsideRoot):
        root.working_dir(cwd)


def test_no_working_directory_means_the_root(layout: tuple[ToolsRoot, Path]) -> None:
    root, _ = layout
    assert root.working_dir(None) == root.working_dir("") == root.root
