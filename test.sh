#!/usr/bin/env bash
# Set Corral up with its development tools, lint and type-check it, and run the whole test suite.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
# The bundled model too: tests/worker/engine/test_repeatable.py asks its answers of it.
"${PYTHON:-python3}" scripts/bootstrap.py --dev --default-model
# tests/webui drive Debian's Chromium: as root, install it when missing (without it they skip,
# or fail under CI=true).
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
        || echo "test.sh: could not install chromium; the Web UI tests will not run" >&2
fi
# tests/router/api/test_node_clients_e2e.py runs npm client libraries on Node.js 20+: as root,
# install Debian's Node.js and npm when missing (without them the tests skip, or fail under
# CI=true; a Node.js older than 20 counts as missing).
if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; } \
        || echo "test.sh: could not install Node.js and npm; the npm client tests will not run" >&2
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# The layering contracts in pyproject.toml: no imports between router, worker and downloads,
# and the layers inside each (docs/architecture.md, Code map).
.venv/bin/lint-imports --no-logo
# Two test processes (pytest-xdist), a file each at a time: one process leaves a core idle while
# it waits on the routers and workers it starts (CI: 2 cores, 36 minutes in one process).
# CORRAL_TEST_PROCESSES=0 runs in this process, as `pytest` alone does.
exec .venv/bin/python -m pytest -n "${CORRAL_TEST_PROCESSES:-2}" --dist loadfile "$@"
