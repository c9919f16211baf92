import os

# ggml's OpenMP threads spin between two decodes, and how long decides this worker's speed.
# Measured on 2 cores, single stream, tok/s: spinning for good (OMP_WAIT_POLICY=ACTIVE) 95
# idle / 6 with both cores busy elsewhere; sleeping at once (PASSIVE) 31 / 19; a bounded spin
# of 10,000 rounds 98 / 40. It must be set before llama.cpp's libraries load; the user's own
# OpenMP settings win.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "10000")

from worker.main import main  # after the environment it depends on

main()
