#!/usr/bin/env bash
# Set Corral up with its development tools, lint and type-check it, and run the whole test suite.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
"${PYTHON:-python3}" scripts/bootstrap.py --dev
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
