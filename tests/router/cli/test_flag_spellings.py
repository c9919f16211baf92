"""A ``corral serve`` flag is its row plus its use: its name is spelled in few product modules.

Each flag's name, its ``dest`` (the setting it fills), is counted in the modules of router/ and
corral/ that write it in code: an identifier (a variable, an attribute, a keyword, a parameter)
or a whole string (``"cors_origins"``); comments and docstrings are not code. Its spellings
(``--cors-origins``) are not counted: the router writes the worker's flags of the same spelling
when it starts one. The row is one module, the ``ServeSettings`` field another
(router/settings.py, where the derivations are too), so a flag read through one place is at
most three.

Where several modules serve one concern, router/settings.py builds the concern's own object
from the fields (``settings.listen``, ``settings.sources``, ``settings.scheduler_limits``...)
and each module reads its fields, named as that concern names them (the room's
``most_resident``); a parameter renamed while the value still went through the same modules
would only hide the count.

Another command's own flag of the same spelling is not serve's setting: ``corral ls
--models-dir``/``--models-preset`` and ``corral pull --hf-token`` (router/cli/commands.py), which
argparse names after their spelling, as it does serve's. They cannot be serve's rows read back:
serve's ``--cache-list`` and ``--completion-bash`` run and print those commands, so the rows'
modules already lead to commands.py, and commands.py importing them would close an import circle
(tests/test_layering.py). What they share with serve is read through one place all the same: ls
builds the catalogue's own ``CatalogueSources``, pull's token comes from
``router.cli.hub_download.hub_token`` as serve's downloads' does.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from router.cli.commands import cache_command_parsers
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
# Other commands' flags of serve's spelling (see above), by the module that defines them.
OTHER_COMMANDS = {
    "router/cli/commands.py": frozenset({"models_dir", "models_preset", "hf_token"}),
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
    relative = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else ""
    if flag.dest in OTHER_COMMANDS.get(relative, ()):
        return False
    if flag.dest in COMMON_WORDS:
        own = relative in OWN_MODULES
        return flag.dest in settings or (own and flag.dest in strings)
    return flag.dest in names or flag.dest in strings


def _modules() -> list[Path]:
    return [path for package in PRODUCT for path in sorted((ROOT / package).rglob("*.py"))]


def spelled_in(flag: ServeFlag) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in _modules() if _spells(p, flag)]


def test_each_flag_is_spelled_in_at_most_three_product_modules() -> None:
    found = {flag.dest: spelled_in(flag) for flag in SERVE_FLAGS}
    over = {dest: modules for dest, modules in found.items() if len(modules) > MOST}
    assert over == {}, "read the setting through one place rather than spelling it again"


def test_other_commands_flags_are_their_own() -> None:
    """What OTHER_COMMANDS leaves out is a flag those commands have, never a serve setting read
    there."""
    parsers = cache_command_parsers()
    theirs = {action.dest for parser in parsers.values() for action in parser._actions}
    assert OTHER_COMMANDS["router/cli/commands.py"] <= theirs
    _, settings, _ = _written(ROOT / "router/cli/commands.py")
    assert not settings & OTHER_COMMANDS["router/cli/commands.py"]


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
