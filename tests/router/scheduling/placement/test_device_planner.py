"""GPU placement decisions (router/scheduling/placement/device_planner.py) against a fake
inventory of two GPUs with given free and total memory; models' sizes come from a stand-in for
the GGUF estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from router.capacity.devices import Device, FakeDevices
from router.capacity.placement import Placement
from router.catalogue.catalogue import CatalogueEntry
from router.scheduling.placement.device_planner import DevicePlanner, choose_devices
from router.workers.model_state import ModelState

G, M = 1 << 30, 1 << 20


def model(name: str, **options: str) -> ModelState:
    path = Path(f"/models/{name}.gguf")
    options_ = tuple(sorted(options.items()))
    return ModelState.unloaded(CatalogueEntry(name, path, "models_dir", options=options_))


def sizes(full: Mapping[str, int], least: Mapping[str, int] | None = None) -> DevicePlanner:
    """A planner over two empty 24 GiB GPUs; ``full`` bytes at a model's own context, ``least``
    at --fit-ctx (default: the same)."""
    least = least or full

    def estimate(entry: CatalogueEntry, ctx: int | None) -> int:
        return (full if ctx is None else least)[entry.name]

    devices = FakeDevices([Device("CUDA0", 24 * G, 24 * G), Device("CUDA1", 24 * G, 24 * G)])
    return DevicePlanner(devices, estimate=estimate)


def test_a_model_that_fits_on_one_gpu_goes_to_the_one_with_the_most_room() -> None:
    assert choose_devices(6 * G, {"CUDA0": 10 * G, "CUDA1": 20 * G}) == ("CUDA1",)
    assert choose_devices(6 * G, {"CUDA0": 20 * G, "CUDA1": 10 * G}) == ("CUDA0",)


def test_a_model_is_split_only_when_it_fits_on_no_gpu_alone() -> None:
    assert choose_devices(25 * G, {"CUDA0": 15 * G, "CUDA1": 15 * G}) == ("CUDA0", "CUDA1")
    assert choose_devices(35 * G, {"CUDA0": 15 * G, "CUDA1": 15 * G}) is None


def test_a_pinned_model_goes_where_it_is_pinned_or_nowhere() -> None:
    rooms = {"CUDA0": 10 * G, "CUDA1": 20 * G}
    assert choose_devices(6 * G, rooms, ("CUDA0",)) == ("CUDA0",)
    assert choose_devices(12 * G, rooms, ("CUDA0",)) is None
    # A device the router cannot see (another back-end) is not its to judge.
    assert choose_devices(50 * G, rooms, ("Vulkan0",)) == ("Vulkan0",)


def test_each_device_keeps_its_margin_and_what_others_outside_corral_use() -> None:
    inventory = FakeDevices([Device("CUDA0", 20 * G, 24 * G), Device("CUDA1", 24 * G, 24 * G)])
    planner = DevicePlanner(inventory, estimate=lambda entry, ctx: 0)
    rooms = planner.rooms(inventory.devices(), [], [])
    assert rooms == {"CUDA0": 20 * G - 1024 * M, "CUDA1": 24 * G - 1024 * M}
    assert planner.rooms(inventory.devices(), [], [], (2048, 512)) == {
        "CUDA0": 20 * G - 2048 * M,
        "CUDA1": 24 * G - 512 * M,
    }


def test_the_placement_becomes_the_workers_device_and_fit_target_flags() -> None:
    planner = sizes({"a": 6 * G})
    placement = planner.place(model("a", **{"ctx-size": "4096"}), [], [])
    assert placement == Placement(("CUDA0",), needed=6 * G)
    assert placement.worker_args() == ["--device", "CUDA0"]


def test_a_split_the_router_chose_reaches_the_worker_as_its_tensor_split() -> None:
    # 30 GiB over 23 + 11 GiB of room: in proportion to the room, as llama.cpp's fit splits.
    inventory = FakeDevices([Device("CUDA0", 24 * G, 24 * G), Device("CUDA1", 12 * G, 24 * G)])
    planner = DevicePlanner(inventory, estimate=lambda entry, ctx: 30 * G)
    placement = planner.place(model("a", **{"ctx-size": "4096"}), [], [])
    assert (placement.devices, placement.tensor_split) == (("CUDA0", "CUDA1"), (0.676, 0.324))
    assert placement.worker_args() == ["--device", "CUDA0,CUDA1", "--tensor-split", "0.676,0.324"]
    user = planner.place(model("c", **{"tensor-split": "1,1", "ctx-size": "4096"}), [], [])
    assert user.worker_args() == []  # the user's own split stands
    assert sizes({"a": 6 * G}).place(model("a"), [], []).tensor_split == ()  # one GPU


def test_a_cpu_model_and_a_machine_without_gpus_get_no_placement() -> None:
    assert sizes({"a": G}).place(model("a", **{"n-gpu-layers": "0"}), [], []) == Placement()
    assert sizes({"a": G}).place(model("a", device="none"), [], []) == Placement()
    no_gpus = DevicePlanner(FakeDevices([]), estimate=lambda entry, ctx: G)
    assert no_gpus.place(model("a"), [], []) == Placement()
    assert no_gpus.fits([], [model("a")], [])


def test_a_model_too_big_for_every_gpu_still_loads_on_all_of_them_and_says_so() -> None:
    placement = sizes({"a": 60 * G}).place(model("a"), [], [])
    assert placement.devices == ("CUDA0", "CUDA1")
    assert not placement.fits


def test_with_ctx_size_unset_the_first_model_leaves_room_for_the_next_at_fit_ctx() -> None:
    # Two models kept (--models-max 2), each 20 GiB at its trained context, 6 GiB at --fit-ctx,
    # pinned to one GPU: greedy, the first would take 20 of its 23 GiB and starve the second.
    planner = sizes({"a": 20 * G, "b": 20 * G}, {"a": 6 * G, "b": 6 * G})
    planner = DevicePlanner(planner.inventory, most_resident=2, estimate=planner._estimate)
    a, b = model("a", device="CUDA0"), model("b", device="CUDA0")
    placement = planner.place(a, [], [a, b])
    room = 24 * 1024 - 1024  # MiB on CUDA0 with llama.cpp's margin kept
    # An even share: half of the room stays free, on top of the margin.
    assert placement.fit_target_mib == (1024 + room // 2,)
    assert (room - placement.fit_target_mib[0] + 1024) * M >= 6 * G  # b still fits at fit-ctx


def test_a_share_is_never_below_what_the_model_needs_at_fit_ctx() -> None:
    planner = sizes({"a": 20 * G, "b": 20 * G}, {"a": 16 * G, "b": 4 * G})
    planner = DevicePlanner(planner.inventory, most_resident=2, estimate=planner._estimate)
    a, b = model("a", device="CUDA0"), model("b", device="CUDA0")
    (target,) = planner.place(a, [], [a, b]).fit_target_mib
    assert (24 * G - target * M) == 16 * G  # what a takes at --fit-ctx, not the even 11.5 GiB


def test_a_user_set_context_is_kept_and_a_user_set_margin_counts() -> None:
    planner = sizes({"a": 6 * G, "b": 6 * G})
    a = model("a", **{"ctx-size": "8192"})
    assert planner.place(a, [], [a]).fit_target_mib == ()
    c = model("a", **{"fit-target": "4096"})
    (target,) = planner.place(c, [], [c]).fit_target_mib
    assert target == 4096  # alone in the catalogue: its own margin, nothing reserved


def test_a_split_the_user_chose_is_checked_but_never_narrowed_with_a_device_flag() -> None:
    planner = sizes({"a": 30 * G})
    a = model("a", **{"main-gpu": "1", "split-mode": "none", "ctx-size": "4096"})
    placement = planner.place(a, [], [a])
    assert placement.devices == ("CUDA0", "CUDA1")
    assert placement.worker_args() == []  # --main-gpu 1 counts among all the GPUs


def test_startup_models_the_gpus_cannot_take_are_named_with_the_device() -> None:
    planner = sizes({"a": 20 * G, "b": 20 * G, "c": 20 * G, "d": 30 * G, "e": 1 * G})
    startup = [
        model(name, **options).entry
        for name, options in [
            ("a", {}),
            ("b", {}),  # the other GPU
            ("c", {}),  # fits on neither beside a and b
            ("d", {"device": "CUDA2"}),  # a GPU there is not
            ("e", {"device": "Vulkan0"}),  # another back-end: not the router's to judge
            ("f", {"n-gpu-layers": "0"}),  # on the CPU
        ]
    ]
    misfits = planner.startup_misfits(startup)
    assert misfits == {
        "c": "needs 20480 MiB on the GPUs; free beside the models before it: CUDA0 3072 MiB, "
        "CUDA1 3072 MiB",
        "d": "device CUDA2 not found (GPUs: CUDA0, CUDA1)",
    }
    assert sizes({"big": 60 * G}).startup_misfits([model("big").entry]) == {}  # alone, it spills
