"""How many threads llama.cpp computes with by default: llama-server's rule.

llama-server's default ``--threads`` is ``common_cpu_get_num_math()`` (common/common.cpp): the
physical cores, counted as the distinct ``thread_siblings`` sets in sysfs (hyperthreads do not
help linear algebra); on an Intel hybrid CPU only the performance cores (efficiency cores slow
lock-step threading down). Without sysfs it falls back to the logical CPUs, halved above four.
llama-server finds the performance cores by pinning itself to each CPU and asking CPUID; Linux
lists them in ``/sys/devices/cpu_core/cpus``, which is read here instead.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_threads"]

_SYSFS_CPU = Path("/sys/devices/system/cpu")
_PERFORMANCE_CORES = Path("/sys/devices/cpu_core/cpus")  # only on Intel hybrid CPUs


def _cpu_list(text: str) -> set[int]:
    """``0-3,8,10-11`` → {0, 1, 2, 3, 8, 10, 11}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if part:
            first, _, last = part.partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def _sibling_sets(cpus: set[int] | None, sysfs: Path) -> set[str]:
    """Each core's set of hardware threads, for cpu0, cpu1, … up to the first one missing."""
    siblings: set[str] = set()
    cpu = 0
    while (path := sysfs / f"cpu{cpu}" / "topology" / "thread_siblings").is_file():
        if cpus is None or cpu in cpus:
            siblings.add(path.read_text().strip())
        cpu += 1
    return siblings


def default_threads(
    sysfs: Path = _SYSFS_CPU,
    performance_cores: Path = _PERFORMANCE_CORES,
    logical_cpus: int | None = None,
) -> int:
    cpus = _cpu_list(performance_cores.read_text()) if performance_cores.is_file() else None
    cores = len(_sibling_sets(cpus, sysfs))
    if cores:
        return cores
    logical = logical_cpus or os.cpu_count() or 4
    return logical if logical <= 4 else logical // 2
