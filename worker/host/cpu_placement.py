"""llama-server's CPU affinity and priority (``-C``, ``-Cr``, ``--prio``), for a worker.

llama-server reads ``-C/--cpu-mask`` (hex) and ``-Cr/--cpu-range`` (``lo-hi``) into one mask,
each adding CPUs to it (common/common.cpp ``parse_cpu_mask``, ``parse_cpu_range``), and its
compute threads are pinned to that mask; ``--prio`` sets the nice value
(``set_process_priority``: low 5, medium -5, high -10, realtime -20), with a warning when that is
not permitted. llama-cpp-python's API sets neither, so the worker applies them to itself: on
Linux affinity and niceness belong to each thread, and a thread starts with its creator's, so
every thread the process has gets them before the model loads, and the threads llama.cpp starts
later inherit them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import structlog

__all__ = [
    "PRIORITY_NICE",
    "apply_cpu_set",
    "apply_priority",
    "cpu_set",
    "parse_cpu_mask",
    "parse_cpu_range",
]

_log = structlog.get_logger("corral.worker")
_MAX_CPUS = 512  # ggml's GGML_MAX_N_THREADS: the most CPUs a mask or range may name
_MAX_MASK_DIGITS = 128  # parse_cpu_mask reads at most this many hex digits
# --prio's levels (ggml_sched_priority) → the nice value set_process_priority gives on POSIX.
PRIORITY_NICE = {-1: 5, 0: 0, 1: -5, 2: -10, 3: -20}
_HEX = re.compile(r"[0-9a-fA-F]*")
_ENDS = re.compile(r"[0-9]* [0-9]*")
_TASKS = Path("/proc/self/task")


def parse_cpu_mask(text: str) -> set[int]:
    """``-C``'s hex mask, an optional ``0x`` first: bit n is CPU n (``5`` → {0, 2})."""
    digits = text.removeprefix("0x")[:_MAX_MASK_DIGITS]
    if not _HEX.fullmatch(digits):
        raise ValueError(f"expected a hex mask such as ff or 0x3, got '{text}'")
    value = int(digits or "0", 16)
    return {cpu for cpu in range(value.bit_length()) if value >> cpu & 1}


def parse_cpu_range(text: str) -> set[int]:
    """``-Cr``'s ``lo-hi``, both included; no ``lo``: from CPU 0, no ``hi``: to the last."""
    first, dash, last = text.partition("-")
    if not dash or not _ENDS.fullmatch(first + " " + last):
        raise ValueError(f"expected a range such as 0-3, 4- or -7, got '{text}'")
    lo, hi = int(first or 0), int(last) if last else _MAX_CPUS - 1
    if max(lo, hi) >= _MAX_CPUS:
        raise ValueError(f"CPUs are numbered below {_MAX_CPUS}, got '{text}'")
    return set(range(lo, hi + 1))


def _listed(cpus: set[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus))


def cpu_set(mask: str | None, cpu_range: str | None, available: set[int]) -> set[int] | None:
    """The CPUs ``-C`` and ``-Cr`` name together (None: neither given), among ``available``
    (the CPUs this process may run on); ``ValueError`` names the flag at fault.

    A CPU a mask or a range's given end names must exist; a range's open end stops at the
    last CPU there is.
    """
    cpus: set[int] = set()
    for flag, text, parse in (
        ("--cpu-mask", mask, parse_cpu_mask),
        ("--cpu-range", cpu_range, parse_cpu_range),
    ):
        if text is None:
            continue
        try:
            named = parse(text)
        except ValueError as exc:
            raise ValueError(f"{flag}: {exc}") from None
        if flag == "--cpu-range" and text.endswith("-"):
            named = {cpu for cpu in named if cpu <= max(available)}
        missing = named - available
        if missing:
            raise ValueError(
                f"{flag}: CPU {_listed(missing)} not available (this process may use "
                f"{_listed(available)})"
            )
        cpus |= named
    if (mask, cpu_range) == (None, None):
        return None
    if not cpus:
        given = "--cpu-mask" if cpu_range is None else "--cpu-range"
        raise ValueError(f"{given}: names no CPU (this process may use {_listed(available)})")
    return cpus


def _thread_ids() -> list[int]:
    return [int(task.name) for task in _TASKS.iterdir()]


def apply_cpu_set(cpus: set[int]) -> None:
    """Pin every thread of the process to ``cpus``; threads started later inherit it."""
    for tid in _thread_ids():
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:  # the thread ended since it was listed
            continue


def apply_priority(level: int) -> bool:
    """Give every thread ``--prio level``'s nice value, as llama-server's
    set_process_priority; False (after one warning) where that is not permitted."""
    if level == 0:  # normal: llama-server leaves the priority as it found it
        return True
    nice = PRIORITY_NICE[level]
    for tid in _thread_ids():
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        except ProcessLookupError:
            continue
        except PermissionError as exc:
            _log.warning("failed to set process priority", prio=level, nice=nice, error=str(exc))
            return False
    return True
