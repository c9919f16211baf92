"""How long ggml's OpenMP threads spin between two computations: bounded, for every process
that computes with llama.cpp here (a worker, an RPC server).

Measured on 2 cores, single stream, tok/s: spinning for good (OMP_WAIT_POLICY=ACTIVE) 95
idle / 6 with both cores busy elsewhere; sleeping at once (PASSIVE) 31 / 19; a bounded spin
of 10,000 rounds 98 / 40. An RPC server left to spin made a worker on the same machine 18 times
slower (bench/rpc.py). It must be set before llama.cpp's libraries load; the user's own OpenMP
settings win.
"""

from __future__ import annotations

import os

__all__ = ["bound_openmp_spinning"]


def bound_openmp_spinning() -> None:
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", "10000")
