import os

# ggml's OpenMP threads spin between two decodes, and how long decides this worker's speed.
# Measured on 2 cores, single stream, tok/s: spinning for good (OMP_WAIT_POLICY=ACTIVE) 95
# idle / 6 with both cores busy elsewhere; sleeping at once (PASSIVE) 31 / 19; a bounded spin
# of 10,000 rounds 98 / 40. It must be set before llama.cpp's libraries load; the user's own
# OpenMP settings win.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "10000")

from worker.import_fence import fence_unused_modules

fence_unused_modules()  # before structlog and Litestar look for them

from worker.main import main  # noqa: E402 (after the environment and the fence it depends on)

main()
