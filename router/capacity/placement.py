"""Where the router put a model: the GPUs it may use and the margin its llama.cpp fit keeps.

Decided by :class:`router.scheduling.placement.device_planner.DevicePlanner` when the model
starts, kept by the worker pool for the model's run, and handed to the worker as llama-server flags:
``--device CUDA1`` and, when the router chose the model's share, ``--fit-target MiB,…``
(llama.cpp's fit then shrinks the context until that much stays free on each device); a model
the router split over several GPUs also gets ``--tensor-split``, each device's part in proportion
to its room, as llama.cpp's fit splits by free memory, so that the split is the router's.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Placement"]


@dataclass(frozen=True, slots=True)
class Placement:
    devices: tuple[str, ...] = ()  # () : the router chose nothing (no GPU, or a CPU model)
    # MiB to leave free on each of ``devices``; () : the model's own settings decide.
    fit_target_mib: tuple[int, ...] = ()
    # False: it fits on no device even with every idle model evicted; it loads anyway and
    # llama.cpp's fit keeps on the GPUs what fits, the rest on the CPU (as llama-server).
    fits: bool = True
    needed: int = 0  # the bytes the router expected it to take on the GPUs
    pinned: bool = False  # the preset's ``device`` chose: its flag is there already
    # Each of ``devices``' part of a split the router chose (proportions); () : one device, or
    # the split is the user's or llama.cpp's.
    tensor_split: tuple[float, ...] = ()
    # The cluster node whose agent runs the worker
    # (router/scheduling/placement/node_planner.py); None: this machine, without ``--cluster``.
    node: str | None = None

    def worker_args(self) -> list[str]:
        args = ["--device", ",".join(self.devices)] if self.devices and not self.pinned else []
        if self.fit_target_mib:
            args += ["--fit-target", ",".join(map(str, self.fit_target_mib))]
        if self.tensor_split and not self.pinned:
            args += ["--tensor-split", ",".join(f"{part:g}" for part in self.tensor_split)]
        return args
