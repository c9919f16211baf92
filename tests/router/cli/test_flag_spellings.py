"""A ``corral serve`` flag is its row plus its use: its name is spelled in few product modules.

Each flag's name, its ``dest`` (the setting it fills), is counted in the modules of router/ and
corral/ that write it in code: an identifier (a variable, an attribute, a keyword, a parameter)
or a whole string (``"cors_origins"``); comments and docstrings are not code. Its spellings
(``--cors-origins``) are not counted: the router writes the worker's flags of the same spelling
when it starts one. The row is one module, the ``ServeSettings`` field another
(router/settings.py, where the derivations are too), so a flag read through one place is at
most three.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from router.cli.serve_flag import ServeFlag
from router.cli.serve_flags import SERVE_FLAGS

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("router", "corral")
MOST = 3
# Names that other code writes as ordinary words (a URL's port, a client's timeout, a
# catalogue entry's tags and aliases): for them the row's module, router/settings.py and the
# modules that read the setting (``settings.port``) count.
COMMON_WORDS = frozenset(
    {"host", "port", "timeout", "tools", "tags", "aliases", "schedule", "offline"}
)
OWN_MODULES = frozenset(
    {"router/cli/serve_flags.py", "router/cli/access_flags.py", "router/settings.py"}
)
# Flags still spelled in more modules, and in how many: a count may only fall, and a flag leaves
# this table when it reaches MOST. Each is a setting two modules read (the server binds the host
# the guard checks; the app's origin gate and the server's CORS headers), a parameter of the
# same name where it is used (the catalogue's model_files, the scheduler's max_queue,
# corral.http's allowed_hosts and reuse_port, which the worker shares), or another command's
# flag of the same name (corral ls --models-dir, corral pull --hf-token).
NOT_YET: dict[str, int] = {
    "max_queue": 4,  # scheduling/scheduler.py, services.py
    "models_dir": 5,  # catalogue/catalogue.py, cli/commands.py, startup.py
    "model_files": 6,  # catalogue/catalogue.py, cli/commands.py, single_model.py, startup.py
    "hf_repos": 6,  # cli/shortcuts.py, server.py, single_model.py, startup.py
    "mmproj_file": 4,  # catalogue/catalogue.py, startup.py
    "models_preset": 5,  # cli/commands.py, server.py, startup.py
    "aliases": 4,  # api/models.py, single_model.py
    "models_max": 8,  # api/models.py, scheduling/device_planner.py, room.py and scheduler.py,
    # services.py, startup.py
    "models_autoload": 4,  # api/inference.py, api/models.py
    "offline": 4,  # server.py, startup.py
    "hf_token": 5,  # cli/commands.py, server.py, workers/download_jobs.py
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@cache
def _written(path: Path) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """A module's identifiers, the attributes it reads from something called settings, and its
    strings (docstrings aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docstrings = _docstrings(tree)
    names: set[str] = set()
    settings: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
            if ast.unparse(node.value).endswith("settings"):
                settings.add(node.attr)
        elif isinstance(node, ast.keyword | ast.arg) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    strings = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }
    return frozenset(names), frozenset(settings), frozenset(strings)


def _spells(path: Path, flag: ServeFlag) -> bool:
    names, settings, strings = _written(path)
    if flag.exits:  # its dest is argparse's alone
        return False
    if flag.dest in COMMON_WORDS:
        own = path.is_relative_to(ROOT) and str(path.relative_to(ROOT)) in OWN_MODULES
        return flag.dest in settings or (own and flag.dest in strings)
    return flag.dest in names or flag.dest in strings


def _modules() -> list[Path]:
    return [path for package in PRODUCT for path in sorted((ROOT / package).rglob("*.py"))]


def spelled_in(flag: ServeFlag) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in _modules() if _spells(p, flag)]


def test_each_flag_is_spelled_in_at_most_three_product_modules() -> None:
    found = {flag.dest: spelled_in(flag) for flag in SERVE_FLAGS}
    over = {
        dest: modules for dest, modules in found.items() if len(modules) > NOT_YET.get(dest, MOST)
    }
    assert over == {}, "read the setting through one place rather than spelling it again"
    done = sorted(dest for dest in NOT_YET if len(found[dest]) < NOT_YET[dest])
    assert done == [], "fewer modules now: lower (or drop) their counts in NOT_YET"


def test_the_count_sees_code_and_not_prose(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        '"""Mentions cors_origins."""\n'
        "# cors_origins\n"
        'HELP = "see --cors-origins"\n'
        "def f(settings):\n"
        "    return settings.port, url.timeout\n"
    )
    by_dest = {flag.dest: flag for flag in SERVE_FLAGS}
    assert not _spells(module, by_dest["cors_origins"])
    assert _spells(module, by_dest["port"])
    assert not _spells(module, by_dest["tools_root"])
    assert not _spells(module, by_dest["timeout"])
    module.write_text('ORIGINS = options["cors_origins"]\n')
    _written.cache_clear()
    assert _spells(module, by_dest["cors_origins"])
