"""docs/architecture.md's code map names only files and folders that exist.

The map is read by people deciding where a change goes, so a name left behind by a move sends
them to nothing; files moved often enough that it drifted (issue 36 counted seven stale names).
Three kinds of name are checked: repository paths (``router/workers/pool.py``, ``tests/support/``),
core module names (``corral.hub.names``), and the code map's tables and paragraphs, whose names
are relative to the folder of their row (``workers/`` … ``pool``, ``model_state``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = ("corral", "router", "worker", "downloads")
# Top-level entries a path in the page may start with: anything else with a slash is an URL
# path (`/models/sse`), a hub reference (`org/repo:TAG`) or a llama.cpp file (`common/arg.cpp`).
TOP_LEVEL = (*PACKAGES, "tests", "scripts", "docs", "bench", "webui", "config")
TICKED = re.compile(r"`([^`]+)`")
REPO_PATH = re.compile(rf"(?<![\w./-])(?:{'|'.join(TOP_LEVEL)})/[A-Za-z0-9_./-]*")
MODULE_NAME = re.compile(r"[a-z_][a-z0-9_]*/?")
DOTTED = re.compile(r"(?:corral|router|worker|downloads)(?:\.[a-z_][a-z0-9_]*)+")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# Ticked words in a folder's description that are not its modules: (folder, word) and why.
NOT_MODULES = {
    ("completions/", "multimodal_data"): "a field of a raw completion request",
}


def page_text() -> str:
    """The page without its fenced diagrams, whose backticks would pair with the prose's."""
    return FENCE.sub("", PAGE.read_text(encoding="utf-8"))


def _is_module(base: Path, name: str) -> bool:
    """``name`` (``pool`` or ``api/``) is a module or package directly in ``base``."""
    if name.endswith("/"):
        return (base / name).is_dir()
    return (base / f"{name}.py").is_file() or (base / name / "__init__.py").is_file()


def _is_module_under(base: Path, name: str) -> bool:
    """``name`` is a module or folder in ``base`` or any folder below it.

    A row may name modules of its subfolders (``api/``: each API's ``protocol``, ``routes``).
    """
    return base.is_dir() and any(
        _is_module(folder, name)
        for folder in (base, *(p for p in base.rglob("*") if p.is_dir()))
        if "__pycache__" not in folder.parts
    )


def repository_paths(text: str) -> list[str]:
    """Names with a slash that start at a top-level folder of the repository, ticked or not
    (``router/workers/pool.py``, (router/api/webui.py), ``tests/support/``)."""
    found = []
    for match in REPO_PATH.finditer(text):
        found.append(match.group(0).rstrip(".,;:"))
    return found


def module_names(text: str) -> list[str]:
    """Ticked dotted names of the four packages' modules (``corral.hub.names``)."""
    return [name for name in TICKED.findall(text) if DOTTED.fullmatch(name)]


def scoped_names(cell: str) -> list[tuple[str | None, str]]:
    """(folder it is relative to, name) for the module names a code-map description gives.

    Names outside any parenthesis are the row's own modules (folder ``None``); those inside the
    parenthesis that follows a folder's name (``ollama/`` (… ``protocol`` …)) are that folder's.
    Ticked words elsewhere in parentheses are flags, types or functions and are left alone.
    """
    found: list[tuple[str | None, str]] = []
    depth = 0
    scope: list[str | None] = []
    last: str | None = None
    for piece in re.split(r"(`[^`]*`|[()])", cell):
        if piece == "(":
            scope.append(last if last and last.endswith("/") and depth == 0 else None)
            depth += 1
        elif piece == ")":
            depth = max(0, depth - 1)
            if scope:
                scope.pop()
        elif piece.startswith("`") and piece.endswith("`") and len(piece) > 1:
            name = piece[1:-1]
            if not MODULE_NAME.fullmatch(name):
                continue
            if depth == 0:
                found.append((None, name))
                last = name
            elif depth == 1 and scope and scope[-1] and (scope[-1], name) not in NOT_MODULES:
                found.append((scope[-1], name))
    return found


def _package_sections(text: str) -> list[tuple[str, list[str]]]:
    """The code map's blocks per package: (package, lines) from its bold heading to the next."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        heading = re.match(r"\*\*`(corral|router|worker|downloads)/`\*\*(.*)", line)
        if heading:
            sections.append((heading.group(1), [heading.group(2)]))
        elif sections and line.strip() and not line.startswith("**"):
            sections[-1][1].append(line)
        elif sections and line.startswith("**"):
            sections.append(("", []))
    return [(package, lines) for package, lines in sections if package]


def code_map_names(text: str) -> list[tuple[Path, str, bool]]:
    """(folder, name, directly-in-it) for every module the code map's package blocks name."""
    found: list[tuple[Path, str, bool]] = []
    for package, lines in _package_sections(text):
        root = ROOT / package
        # A paragraph's parentheses may close on a later line: it is read as one.
        prose = " ".join(line for line in lines if not line.startswith("|"))
        rows: list[tuple[Path, str]] = [(root, prose)]
        for line in lines:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not line.startswith("|") or len(cells) != 2:
                continue
            if set(cells[0]) <= set("-: ") or cells[0].startswith("folder"):
                continue
            own = [n for n in TICKED.findall(cells[0]) if MODULE_NAME.fullmatch(n)]
            found += [(root, n, True) for n in own]
            folder = root / own[0] if len(own) == 1 and own[0].endswith("/") else root
            rows.append((folder, cells[1]))
        for folder, description in rows:
            for scope, name in scoped_names(description):
                base = folder / scope if scope else folder
                found.append((base, name, False))
    return found


def test_every_repository_path_the_page_names_exists() -> None:
    paths = repository_paths(PAGE.read_text(encoding="utf-8"))  # the diagrams' too
    assert "router/capacity/memory_budget.py" in paths
    missing = sorted({p for p in paths if not (ROOT / p).exists()})
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_core_module_the_page_names_exists() -> None:
    text = page_text()
    names = module_names(text)
    assert "corral.hub.names" in names
    missing = sorted(
        {n for n in names if not _is_module(ROOT.joinpath(*n.split(".")[:-1]), n.split(".")[-1])}
    )
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_module_of_the_code_map_exists() -> None:
    named = code_map_names(page_text())
    # The blocks were found: a heading reworded would otherwise make this pass on nothing.
    assert (ROOT / "router" / "workers", "pool", False) in named
    assert (ROOT / "worker", "lifecycle", True) in named
    assert (ROOT / "downloads", "runner", False) in named
    missing = sorted(
        {
            f"{base.relative_to(ROOT)}/{name}"
            for base, name, direct in named
            if not (_is_module(base, name) if direct else _is_module_under(base, name))
        }
    )
    assert not missing, (
        f"docs/architecture.md's code map names modules that do not exist: {missing}"
    )


def test_a_stale_name_is_caught() -> None:
    """The checks bite: a moved module left in a row, a path, a dotted name."""
    row = "| `workers/` | `pool` and `gone_module` (`claim`/`release`), `spares` |"
    page = f"**`router/`** (the router)\n\n| folder / module | what |\n|---|---|\n{row}\n"
    named = code_map_names(page)
    stale = [n for base, n, direct in named if not _is_module_under(base, n)]
    assert stale == ["gone_module"]
    assert repository_paths("see `router/workers/gone.py`, `/models/sse`, org/repo") == [
        "router/workers/gone.py"
    ]
    assert repository_paths("(router/gone.py). In tests/gone/.") == [
        "router/gone.py",
        "tests/gone/",
    ]
    assert module_names("`corral.hub.gone` and `corral serve`") == ["corral.hub.gone"]
    assert scoped_names("`ollama/` (`protocol` types, `--flag`), `x` (`not_a_module`)") == [
        (None, "ollama/"),
        ("ollama/", "protocol"),
        (None, "x"),
    ]
