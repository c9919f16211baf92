"""The layering rule: router, worker and downloads share only the core package ``corral``.

They run as separate processes and speak only the child protocol and loopback HTTP, so an import
from one into another would drag a process's code (and its start-up cost and state) into the
others. The import-linter contracts in ``pyproject.toml`` enforce this in ``test.sh``; the AST scan
here says the same thing with a failure that names the file and line, and the last test proves the
contracts themselves fail on a cross import rather than pass vacuously. The layers contracts inside
each process (docs/architecture.md, Code map) are shown to bite the same way.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROCESSES = ("router", "worker", "downloads")
CORE = "corral"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
WORKER_LAYERS = "worker: api > chat > answer > engine > sampling > host"
ROUTER_LAYERS = "router: api > relay, security > scheduling > workers > catalogue > observe"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in a module, relative ones resolved."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                # A package's own __init__ is level 1 relative to itself, a module to its parent.
                anchor = module.split(".")
                drop = node.level - 1 if is_package else node.level
                anchor = anchor[: len(anchor) - drop]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.append((node.lineno, base))
    return found


def cross_imports(root: Path) -> list[str]:
    """Every import that breaks the layering in the four packages under ``root``."""
    broken: list[str] = []
    for package in (CORE, *PROCESSES):
        for path in sorted((root / package).rglob("*.py")):
            module = _module_name(path, root)
            tree = ast.parse(path.read_text(), filename=str(path))
            for line, target in _imported(tree, module, path.name == "__init__.py"):
                top = target.split(".")[0]
                if top == package or top not in (CORE, *PROCESSES):
                    continue
                if package != CORE and top == CORE:
                    continue
                broken.append(f"{path.relative_to(root)}:{line}: {package} imports {target}")
    return broken


def test_no_package_imports_another_but_the_core() -> None:
    assert cross_imports(ROOT) == []


def test_the_scan_finds_relative_and_absolute_cross_imports(tmp_path: Path) -> None:
    # The scan must be able to fail: plant one of each kind of bad import and see it reported.
    for package in (CORE, *PROCESSES):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "worker" / "ok.py").write_text("from corral import errors\nfrom . import ok\n")
    (tmp_path / "worker" / "bad.py").write_text("import router.cli.main\n")
    (tmp_path / "corral" / "bad.py").write_text("from downloads import runner\n")
    (tmp_path / "router" / "sub").mkdir()
    (tmp_path / "router" / "sub" / "__init__.py").write_text("from ...worker import app\n")

    assert cross_imports(tmp_path) == [
        "corral/bad.py:1: corral imports downloads",
        "router/sub/__init__.py:1: router imports worker",
        "worker/bad.py:1: worker imports router.cli.main",
    ]


def _contract_packages() -> list[str]:
    """Every package the contracts of pyproject.toml name, e.g. ``worker.engine`` (a layer) or
    ``router.relay.proxy`` (a forbidden contract's source module, a package in the stand-ins)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages: list[str] = []
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "forbidden":
            packages += contract["source_modules"] + contract["forbidden_modules"]
        if contract["type"] != "layers":
            continue
        for container in contract["containers"]:
            for layer in contract["layers"]:
                names = layer.replace("|", ":").split(":")
                packages += [f"{container}.{name.strip()}" for name in names]
    return sorted(set(packages), key=lambda name: name.count("."))  # parents first


@pytest.mark.parametrize(
    ("importer", "imported", "contract"),
    [
        ("worker", "router", "router, worker and downloads never import one another"),
        ("corral", "downloads", "corral imports none of router, worker, downloads"),
        ("worker.engine", "worker.api", "worker: api > chat > answer > engine > sampling > host"),
        (
            "worker.sampling",
            "worker.chat",
            "worker: api > chat > answer > engine > sampling > host",
        ),
        (
            "router.workers",
            "router.relay",
            "router: api > relay, security > scheduling > workers > catalogue > observe",
        ),
        (
            "router.catalogue",
            "router.scheduling",
            "router: api > relay, security > scheduling > workers > catalogue > observe",
        ),
        ("router.relay.proxy", "router.observe", "the relay imports neither observe nor security"),
        (
            "router.relay.peer_proxy",
            "router.security",
            "the relay imports neither observe nor security",
        ),
    ],
)
def test_the_import_linter_contracts_break_on_a_cross_import(
    tmp_path: Path, importer: str, imported: str, contract: str
) -> None:
    # The contracts are pyproject.toml's own, run against stand-in packages (the four processes'
    # and every package the contracts name) in which one module makes the forbidden import:
    # lint-imports must exit non-zero and name the contract.
    for package in (CORE, *PROCESSES, *_contract_packages()):
        folder = tmp_path.joinpath(*package.split("."))
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").write_text("")
        (folder / "core_user.py").write_text("import corral\n")
    bad = tmp_path.joinpath(*importer.split(".")) / "bad.py"
    bad.write_text(f"import {imported}\n")
    config = tmp_path / "pyproject.toml"
    shutil.copyfile(ROOT / "pyproject.toml", config)

    def lint() -> subprocess.CompletedProcess[str]:
        # Run from tmp_path so the stand-ins, not the installed packages, are what it imports.
        return subprocess.run(
            [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )

    result = lint()
    assert result.returncode != 0, result.stdout
    assert f"{contract} BROKEN" in result.stdout
    assert f"{importer}.bad -> {imported}" in result.stdout

    bad.unlink()
    shutil.rmtree(bad.parent / "__pycache__", ignore_errors=True)
    result = lint()
    assert result.returncode == 0, result.stdout


def import_cycles(root: Path) -> list[list[str]]:
    """Groups of modules under ``root`` that import one another in a circle (annotations-only
    imports included: a circle of types is still a circle a reader has to untangle)."""
    modules = {
        _module_name(path, root): path
        for package in (CORE, *PROCESSES)
        for path in sorted((root / package).rglob("*.py"))
    }
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # "from package import module" imports the module, not the package's own names.
                named = {f"{node.module}.{alias.name}" for alias in node.names}
                targets |= named & modules.keys() or {node.module}
        graph[module] = {target for target in targets if target in modules} - {module}
    # Tarjan's strongly connected components: each of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(circles)


def test_no_modules_import_one_another_in_a_circle() -> None:
    # A circle makes the layers inside a folder meaningless (the engine's batching -> slot
    # files -> model -> batching was one): what depends on what must read one way.
    assert import_cycles(ROOT) == []


def test_the_cycle_scan_finds_a_circle(tmp_path: Path) -> None:
    for package in (CORE, *PROCESSES):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "worker" / "a.py").write_text("from worker.b import thing\n")
    (tmp_path / "worker" / "b.py").write_text("from worker import c\n")
    (tmp_path / "worker" / "c.py").write_text("import worker.a\n")
    (tmp_path / "worker" / "d.py").write_text("import worker.a\n")  # on the circle's edge
    assert import_cycles(tmp_path) == [["worker.a", "worker.b", "worker.c"]]


def test_test_modules_share_helpers_only_through_tests_support() -> None:
    # Importing a helper from another test module runs that module's tests' fixtures and imports
    # too, and ties two suites together: shared helpers live in tests/support/ instead.
    tests = ROOT / "tests"
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for path in sorted(tests.rglob("*.py"))
        for line, target in _imported(
            ast.parse(path.read_text()), _module_name(path, ROOT), path.name == "__init__.py"
        )
        if target.startswith("tests.") and target.split(".")[-1].startswith("test_")
    ]
    assert offending == []
