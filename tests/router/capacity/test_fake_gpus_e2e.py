"""A real router and real workers on fake GPUs (``CORRAL_FAKE_DEVICES``, a test seam): the workers
see the devices the router sees, load on the CPU and report the model where the router put it
(worker/devices/fake.py), so the router's GPU rules run on figures a real worker measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.model_events import EventReader
from tests.support.router_process import RouterProcess, running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
FAKE = {"CORRAL_FAKE_DEVICES": "CUDA0=6GiB/8GiB,CUDA1=8GiB/8GiB"}


def _use(router: RouterProcess, model: str) -> dict[str, Any]:
    reply = router.client.post("/v1/chat/completions", json={"model": model, **CHAT})
    assert reply.status_code == 200, reply.text
    return router.models()[model]


def _reported(entry: dict[str, Any]) -> dict[str, int]:
    """Bytes per GPU in the worker's own report (``meta.devices``)."""
    return {
        d["name"]: d["model_bytes"] + d["context_bytes"] + d["compute_bytes"]
        for d in entry["meta"]["devices"]
        if d["name"] != "CPU"
    }


def test_a_worker_reports_its_model_on_the_fake_gpu_and_a_restarted_router_remembers_it(
    models_dir: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    (cache / "corral").mkdir(parents=True)
    (cache / "corral" / "footprints.json").write_text("{ not json")  # never a reason to fail
    env = {**FAKE, "XDG_CACHE_HOME": str(cache)}
    args = ["--models-dir", str(models_dir), "-c", "256"]
    with running_router(args, env=env) as router:
        router.wait_for_log("measured footprints unreadable: ignored")
        alpha = _use(router, "alpha")
    assert alpha["placement"]["devices"] == ["CUDA1"]  # the most room
    on_gpu = _reported(alpha)
    assert list(on_gpu) == ["CUDA1"]
    assert on_gpu["CUDA1"] > 0
    assert alpha["memory"]["devices"] == on_gpu
    cpu = next(d for d in alpha["meta"]["devices"] if d["name"] == "CPU")
    assert cpu["layers"] == 0
    assert alpha["meta"]["fit"]["spilled_layers"] == 0
    # The next router expects what this one measured, not the estimate.
    with running_router(args, env=env) as router:
        again = _use(router, "alpha")
    measured = alpha["memory"]["vram"]
    assert alpha["placement"]["needed"] != measured
    assert again["placement"]["needed"] == measured


def test_startup_skips_the_models_the_gpus_cannot_take_and_says_which_device(
    models_dir: Path, tmp_path: Path
) -> None:
    alpha, beta = models_dir / "alpha.gguf", models_dir / "beta.gguf"
    preset = tmp_path / "models.ini"
    preset.write_text(
        f"[*]\nload-on-startup = true\nctx-size = 256\n"
        f"[alpha]\nmodel = {alpha}\n[beta]\nmodel = {beta}\n"
        f"[gamma]\nmodel = {alpha}\ndevice = CUDA5\n"
    )
    # Half a MiB beside the 1024 MiB margin: room for one tiny model's estimate, not two.
    env = {"CORRAL_FAKE_DEVICES": "CUDA0=1024.5MiB/2GiB"}
    with running_router(["--models-preset", str(preset)], env=env) as router:
        skipped = {
            name: router.wait_for_log(
                "not loaded at startup: the GPUs cannot take it; it loads at its first request",
                model=name,
            )["reason"]
            for name in ("beta", "gamma")
        }
        statuses = {name: entry["status"]["value"] for name, entry in router.models().items()}
    assert skipped["beta"].startswith("needs 1 MiB on the GPUs; free beside the models before")
    assert skipped["beta"].endswith("CUDA0 0 MiB")
    assert skipped["gamma"] == "device CUDA5 not found (GPUs: CUDA0)"
    assert statuses["alpha"] in ("loading", "loaded")
    assert (statuses["beta"], statuses["gamma"]) == ("unloaded", "unloaded")


def test_a_model_split_over_two_gpus_is_split_as_the_router_planned(models_dir: Path) -> None:
    # Room for 0.3 and 0.1 MiB beside the 1024 MiB margins: the tiny model (about 0.36 MiB by
    # its estimate) fits on neither alone, on both together, three parts to one.
    env = {"CORRAL_FAKE_DEVICES": "CUDA0=1024.3MiB/2GiB,CUDA1=1024.1MiB/2GiB"}
    with running_router(["--models-dir", str(models_dir), "-c", "256"], env=env) as router:
        alpha = _use(router, "alpha")
    placement = alpha["placement"]
    assert (placement["devices"], placement["tensor_split"]) == (["CUDA0", "CUDA1"], [0.75, 0.25])
    placed = {d["name"]: d for d in alpha["meta"]["devices"]}
    # As the worker was told (by free memory alone, it would have been about even).
    assert placed["CUDA0"]["model_bytes"] > 2 * placed["CUDA1"]["model_bytes"] > 0


def test_a_sleeping_model_counts_at_what_it_holds_now(models_dir: Path) -> None:
    # Half a MiB beside the margin: once alpha reported what it took (more than its estimate),
    # beta fits beside it only while alpha sleeps.
    env = {"CORRAL_FAKE_DEVICES": "CUDA0=1024.5MiB/2GiB"}
    args = ["--models-dir", str(models_dir), "-c", "256", "--sleep-idle-seconds", "1"]
    with running_router(args, env=env) as router:
        events = EventReader(router)
        try:
            loaded = _use(router, "alpha")
            assert loaded["memory"]["vram"] > 512 * 1024
            events.wait_for("alpha", "status_change", status="sleeping")
            asleep = router.models()["alpha"]
            _use(router, "beta")
            alpha = router.models()["alpha"]
        finally:
            events.close()
    assert "vram" not in asleep["memory"]  # its weights and KV cache are freed
    assert alpha["status"]["value"] == "sleeping"  # not evicted to make room for beta
