"""Ray is an optional extra (``corral[cluster]``): without ``--cluster`` nothing imports it.

Two checks: a router's modules, imported as ``corral serve`` imports them, leave ``ray`` out of
``sys.modules``; and in the product's code only router/cluster/ imports Ray, while that folder
is imported by no module outside it but in a function (router/services.py, with the flag) or
for annotations.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "router" / "cluster"


def test_a_plain_router_never_imports_ray() -> None:
    script = (
        "import sys\n"
        "import router.cli.main, router.server, router.app, router.services\n"
        "from router.api import models, metrics\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def _top_level_imports(tree: ast.Module) -> set[str]:
    """Modules a file imports when it is imported: not in functions, not for annotations."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_only_the_cluster_folder_imports_ray_and_only_lazily_is_it_imported() -> None:
    wrong = []
    for path in sorted((ROOT / "router").rglob("*.py")) + sorted((ROOT / "corral").rglob("*.py")):
        imports = _top_level_imports(ast.parse(path.read_text(encoding="utf-8")))
        inside = CLUSTER in path.parents
        uses_ray = any(name == "ray" or name.startswith("ray.") for name in imports)
        uses_cluster = any(name.startswith("router.cluster") for name in imports)
        if (uses_ray or uses_cluster) and not inside:
            wrong.append(str(path.relative_to(ROOT)))
    assert wrong == []
