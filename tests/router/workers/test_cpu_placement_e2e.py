"""A real router: each model's worker runs on the CPUs its preset section names."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from tests.support.router_process import running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _worker_cpus(router_pid: int) -> dict[str, set[int]]:
    """Each worker's CPUs, by the model it serves: one set when all its threads share it."""
    placed: dict[str, set[int]] = {}
    for child in psutil.Process(router_pid).children():
        argv = child.cmdline()
        model = Path(argv[argv.index("--model") + 1]).stem
        sets = [os.sched_getaffinity(thread.id) for thread in child.threads()]
        assert all(cpus == sets[0] for cpus in sets), sets
        placed[model] = sets[0]
    return placed


def test_each_worker_runs_on_the_cpus_of_its_preset_section(
    models_dir: Path, tmp_path: Path
) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    first, last = cpus[0], cpus[-1]
    preset = tmp_path / "models.ini"
    preset.write_text(
        f"[alpha]\nmodel = {models_dir / 'alpha.gguf'}\ncpu-range = {last}-{last}\n"
        f"[beta]\nmodel = {models_dir / 'beta.gguf'}\nC = {1 << first:x}\n"
    )
    with running_router(["--models-preset", str(preset), "-c", "256"]) as router:
        for model in ("alpha", "beta"):
            reply = router.client.post("/v1/chat/completions", json={"model": model, **CHAT})
            assert reply.status_code == 200, reply.text
        assert _worker_cpus(router.process.pid) == {"alpha": {last}, "beta": {first}}
