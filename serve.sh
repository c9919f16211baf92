#!/usr/bin/env bash
# Set Corral up (the first run compiles llama-cpp-python) and serve the bundled default model,
# SmolLM2-135M-Instruct, on http://127.0.0.1:8080. Extra arguments go to `corral serve`.
set -euo pipefail
cd "$(dirname "$0")"
"${PYTHON:-python3}" scripts/bootstrap.py --default-model  # says which back-end it built
.venv/bin/corral serve --list-devices  # the GPUs llama.cpp sees: "(none)" on a CPU build
exec .venv/bin/corral serve --models-dir models "$@"
