"""CI's share of llama.cpp's server tests: the ones listed in ``llama_server_expected.txt`` must
pass against ``python -m worker`` and against ``corral serve``.

The list holds tests that llama-server itself passes with the stand-in models, that need no real
weights and no network, and that run in a few seconds each; Corral passes every one of them. A
test that stops passing fails this check with its name (docs/development.md, "llama.cpp's server
tests"). The tests come from the llama.cpp tree of ``run_llama_server_tests.py``; where there is
none, from the llama-cpp-python sdist on PyPI.

    .venv/bin/python scripts/check_llama_server_tests.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from run_llama_server_tests import llama_cpp_tree, run_suite

EXPECTED = Path(__file__).with_name("llama_server_expected.txt")


def _expected() -> list[str]:
    """pytest node ids (``unit/test_x.py::name``), one a line, ``#`` comments left out."""
    lines = (line.strip() for line in EXPECTED.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _outcome_id(node_id: str) -> str:
    """A node id as the results name it: ``unit/test_x.py::t`` is ``unit.test_x::t``."""
    path, _, name = node_id.partition("::")
    return f"{path.removesuffix('.py').replace('/', '.')}::{name}"


def main() -> int:
    node_ids = _expected()
    tree = llama_cpp_tree(None)
    regressions: list[str] = []
    for server in ("worker", "corral"):
        _, outcomes = run_suite(server, f"check-{server}", tree, node_ids)
        regressions += [
            f"{server}: {node_id} {outcomes.get(_outcome_id(node_id), 'not run')}"
            for node_id in node_ids
            if outcomes.get(_outcome_id(node_id)) != "passed"
        ]
    if regressions:
        print("llama.cpp server tests that passed before and do not now:", file=sys.stderr)
        print("\n".join(regressions), file=sys.stderr)
        return 1
    print(f"llama.cpp server tests: {len(node_ids)} passed against the worker and corral serve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
