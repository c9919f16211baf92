#!/usr/bin/env bash
# Set Corral up (the first run compiles llama-cpp-python) and serve the bundled default model,
# SmolLM2-135M-Instruct, on http://127.0.0.1:8080. Extra arguments go to `corral serve`.
set -euo pipefail
cd "$(dirname "$0")"
"${PYTHON:-python3}" scripts/bootstrap.py --default-model
exec .venv/bin/corral serve --models-dir models "$@"
