"""``CORRAL_FAKE_DEVICES``: GPUs that are not there, for tests on machines without one.

``CORRAL_FAKE_DEVICES="CUDA0=20GiB/24GiB,CUDA1=24GiB/24GiB"`` gives each device's free and total
memory. The router reads it instead of NVML (router/capacity/devices.py) and its workers inherit it
(corral/children/environment.py passes it on), so both ends see one machine: a worker lists the
fake devices as its GPUs and reports a model placed on them as if its buffers were there
(worker/devices/fake.py). Parsed here, once, for both.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from corral.children.device_use import DeviceInfo

__all__ = ["FAKE_DEVICES_VARIABLE", "fake_devices", "parse_fake_devices"]

FAKE_DEVICES_VARIABLE = "CORRAL_FAKE_DEVICES"
FAKE_DESCRIPTION = "fake"

_UNITS = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B?)\s*", re.IGNORECASE)


def _size(text: str) -> int:
    match = _SIZE.fullmatch(text)
    unit = match.group(2).upper() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"{FAKE_DEVICES_VARIABLE}: {text!r} is not a size like 24GiB or 512MiB")
    return int(float(match.group(1)) * _UNITS[unit])


def parse_fake_devices(spec: str) -> list[DeviceInfo]:
    """``"CUDA0=20GiB/24GiB,CUDA1=24GiB/24GiB"``: each device's free/total."""
    devices = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, sizes = item.partition("=")
        free, _, total = sizes.partition("/")
        if not name.strip() or not total:
            raise ValueError(f"{FAKE_DEVICES_VARIABLE}: {item!r} is not NAME=FREE/TOTAL")
        devices.append(DeviceInfo(name.strip(), FAKE_DESCRIPTION, _size(free), _size(total)))
    return devices


def fake_devices(environ: Mapping[str, str] | None = None) -> list[DeviceInfo] | None:
    """The fake devices the environment gives; None when it gives none (the real ones count)."""
    spec = (os.environ if environ is None else environ).get(FAKE_DEVICES_VARIABLE)
    return None if spec is None else parse_fake_devices(spec)
