"""``corral serve --list-devices`` answers as llama-server's, through a worker."""

from __future__ import annotations

import subprocess
import sys


def test_serve_lists_the_workers_devices_and_exits() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "router", "serve", "--port", "1", "--list-devices"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "Available devices:\n  (none)\n")
