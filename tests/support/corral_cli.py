"""``corral …`` run as a user runs it: a subprocess of this checkout, with no ``LLAMA_*`` or
``CORRAL_*`` variable of the test run's environment to change its answers."""

from __future__ import annotations

import os
import subprocess
import sys


def corral(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLAMA_", "CORRAL_"))}
    return subprocess.run(
        [sys.executable, "-m", "router", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
