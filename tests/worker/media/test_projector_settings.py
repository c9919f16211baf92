"""The projector's llama-server flags: ``--mmproj-device``, ``--no-warmup`` and the image token
bounds reach libmtmd; an unknown device fails the load by name."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_media import png_bytes
from tests.support.files.tiny_mmproj import write_tiny_mmproj
from tests.support.worker_process import worker
from worker.host.ggml_backends import device_by_name
from worker.settings.groups import ProjectorSettings
from worker.settings.parse import parse_worker_args


@pytest.fixture(scope="module")
def seer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("seer")
    model = write_tiny_gguf(folder / "seer.gguf", name="seer", attention_gain=10.0)
    return model, write_tiny_mmproj(folder / "mmproj-seer.gguf")


def _look(url: str) -> tuple[str, int]:
    image = "data:image/png;base64," + base64.b64encode(png_bytes(seed=1)).decode()
    content = [
        {"type": "text", "text": "What is this:"},
        {"type": "image_url", "image_url": {"url": image}},
    ]
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": 8, "temperature": 0}
    answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120).raise_for_status()
    reply = answer.json()
    return reply["choices"][0]["message"]["content"], reply["usage"]["prompt_tokens"]


@pytest.mark.parametrize(
    "flags",
    [
        ("--mmproj-device", "CPU", "--no-warmup"),
        ("-mmdev", "none", "--image-min-tokens", "1", "--image-max-tokens", "4096"),
        ("--mtmd-batch-max-tokens", "64", "--warmup"),
    ],
)
def test_the_projector_runs_as_told_and_answers_the_same(
    seer: tuple[Path, Path], flags: tuple[str, ...]
) -> None:
    model, mmproj = seer
    with worker(model, "--mmproj", str(mmproj)) as plain:
        expected = _look(plain.url)
    with worker(model, "--mmproj", str(mmproj), *flags) as child:
        assert _look(child.url) == expected


def test_an_unknown_projector_device_fails_the_load(seer: tuple[Path, Path]) -> None:
    model, mmproj = seer
    with (
        pytest.raises(AssertionError, match="closed stdout"),
        worker(model, "--mmproj", str(mmproj), "--mmproj-device", "NPU9"),
    ):
        pass
    with pytest.raises(ValueError, match=r"no device 'NPU9' \(devices: .*CPU"):
        device_by_name("NPU9")


def test_the_flags_become_the_projectors_settings() -> None:
    argv = ["-m", "m.gguf", "-mmdev", "CPU", "--no-warmup", "--image-max-tokens", "256"]
    assert parse_worker_args(argv).projector == ProjectorSettings(
        device="CPU", warmup=False, image_max_tokens=256
    )
    assert parse_worker_args(["-m", "m.gguf"]).projector == ProjectorSettings()
