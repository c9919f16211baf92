"""``corral serve --list-devices``: the devices a worker would see, as llama-server lists them.

The router never loads llama.cpp (a GPU context would hold device memory for as long as it
runs), so the flag becomes ``python -m worker --list-devices``, which prints ggml's devices and
exits, as ``corral rpc-server`` becomes the worker's RPC server.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["ListDevices"]


class ListDevices(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, "-m", "worker", "--list-devices"])
