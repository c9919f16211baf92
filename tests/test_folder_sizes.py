"""A folder holds at most 15 modules, so that a newcomer can read one whole (issue 49; the
guide's style rule). ``__init__.py`` and ``conftest.py`` are a package's plumbing, not its
modules; a folder that would grow past the limit splits by concern (for example
router/scheduling/placement/, tests/support/remote/)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("corral", "router", "worker", "downloads", "webui", "bench", "scripts", "tests")
MOST = 15
PLUMBING = frozenset({"__init__.py", "conftest.py"})


def modules_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.py") if p.name not in PLUMBING)


def test_no_folder_holds_more_than_fifteen_modules() -> None:
    folders = [
        folder
        for package in PACKAGES
        for folder in [ROOT / package, *(ROOT / package).rglob("*")]
        if folder.is_dir() and "__pycache__" not in folder.parts and ".venv" not in folder.parts
    ]
    wide = {
        str(folder.relative_to(ROOT)): len(modules_in(folder))
        for folder in folders
        if len(modules_in(folder)) > MOST
    }
    assert wide == {}


def test_the_count_leaves_plumbing_out(tmp_path: Path) -> None:
    for name in [*(f"m{i}.py" for i in range(MOST)), "__init__.py", "conftest.py", "notes.md"]:
        (tmp_path / name).write_text("")
    assert len(modules_in(tmp_path)) == MOST
    (tmp_path / "one_more.py").write_text("")
    assert len(modules_in(tmp_path)) == MOST + 1
