"""LoRA adapters through a real worker (docs/api.md, LoRA adapters).

The adapter is random but large on the output projection, so at scale 1 greedy decoding picks
other tokens than the plain model, and at scale 0 llama.cpp leaves it out of the graph: the
same tokens as no adapter at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_lora import write_tiny_lora
from tests.support.worker_process import WorkerProcess, worker

PROMPT = "once upon a time"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("lora")
    base = write_tiny_gguf(directory / "base.gguf")
    return base, write_tiny_lora(directory / "adapter.gguf", base)


@pytest.fixture(scope="module")
def plain_text(files: tuple[Path, Path]) -> str:
    """What the model says without any adapter loaded."""
    with worker(files[0], "--parallel", "2", "--ctx-size", "8192") as child:
        return _complete(child.url)


@pytest.fixture
def adapted(files: tuple[Path, Path]) -> Iterator[WorkerProcess]:
    base, adapter = files
    with worker(base, "--lora", str(adapter), "--parallel", "2", "--ctx-size", "8192") as child:
        yield child


def _complete(url: str, **extra: Any) -> str:
    body = {"prompt": PROMPT, "n_predict": 12, "temperature": 0, "cache_prompt": False, **extra}
    response = httpx.post(f"{url}/completion", json=body, timeout=120)
    assert response.status_code == 200, response.text
    content: str = response.json()["content"]
    return content


def _set_scale(url: str, scale: float) -> None:
    response = httpx.post(f"{url}/lora-adapters", json=[{"id": 0, "scale": scale}])
    assert response.status_code == 200, response.text
    assert response.json() == {"success": True}


def test_lists_the_adapters_as_llama_server_does(
    adapted: WorkerProcess, files: tuple[Path, Path]
) -> None:
    expected = {"id": 0, "path": str(files[1]), "task_name": "", "prompt_prefix": ""}
    assert httpx.get(f"{adapted.url}/lora-adapters").json() == [{**expected, "scale": 1.0}]
    _set_scale(adapted.url, 0.5)
    assert httpx.get(f"{adapted.url}/lora-adapters").json() == [{**expected, "scale": 0.5}]
    # An adapter left out of the list is switched off, as upstream's construct_lora_list does.
    assert httpx.post(f"{adapted.url}/lora-adapters", json=[]).json() == {"success": True}
    assert httpx.get(f"{adapted.url}/lora-adapters").json() == [{**expected, "scale": 0.0}]


def test_scale_zero_is_the_plain_model_and_scale_one_is_not(
    adapted: WorkerProcess, plain_text: str
) -> None:
    with_adapter = _complete(adapted.url)  # --lora: scale 1 from the start
    assert with_adapter != plain_text
    _set_scale(adapted.url, 0.0)
    assert _complete(adapted.url) == plain_text
    _set_scale(adapted.url, 1.0)
    assert _complete(adapted.url) == with_adapter


def test_init_without_apply_starts_at_scale_zero(files: tuple[Path, Path], plain_text: str) -> None:
    base, adapter = files
    args = ("--lora", str(adapter), "--lora-init-without-apply", "--parallel", "2")
    with worker(base, *args, "--ctx-size", "8192") as child:
        assert [a["scale"] for a in httpx.get(f"{child.url}/lora-adapters").json()] == [0.0]
        assert _complete(child.url) == plain_text


def test_a_request_scale_applies_to_that_request_only(
    files: tuple[Path, Path], plain_text: str
) -> None:
    base, adapter = files
    args = ("--lora-scaled", f"{adapter}:0", "--parallel", "2", "--ctx-size", "8192")
    with worker(base, *args) as child:
        url = child.url
        own = _complete(url, lora=[{"id": 0, "scale": 1.0}])
        assert own != plain_text
        assert _complete(url) == plain_text  # the global scale (0) is untouched
        # A long generation with the adapter runs while a request without it comes and goes:
        # they never share a decode step, so neither sees the other's adapter.
        body = {
            "prompt": PROMPT, "n_predict": 30_000, "temperature": 0, "stream": True,
            "ignore_eos": True, "lora": [{"id": 0, "scale": 1.0}],
        }  # fmt: skip
        with httpx.stream("POST", f"{url}/completion", json=body, timeout=120) as stream:
            lines = stream.iter_lines()
            streamed = ""
            while len(streamed) < len(own):
                line = next(lines)
                if line.startswith("data: "):
                    streamed += httpx.Response(200, content=line[6:]).json()["content"]
            assert _complete(url) == plain_text
            slots = httpx.get(f"{url}/slots").json()
            assert [slot["is_processing"] for slot in slots].count(True) == 1  # still going
        assert streamed.startswith(own)


def test_an_unknown_adapter_id_is_a_400_naming_the_field(adapted: WorkerProcess) -> None:
    url = adapted.url
    response = httpx.post(
        f"{url}/completion", json={"prompt": PROMPT, "lora": [{"id": 0}, {"id": 3, "scale": 1}]}
    )
    assert response.status_code == 400
    assert "lora[1].id" in response.json()["error"]["message"]
    response = httpx.post(f"{url}/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "hi"}], "lora": [{"id": -1, "scale": 1}],
    })  # fmt: skip
    assert response.status_code == 400
    assert "lora[0].id" in response.json()["error"]["message"]
    response = httpx.post(f"{url}/completion", json={"prompt": PROMPT, "lora": {"id": 0}})
    assert response.status_code == 400
    assert "lora" in response.json()["error"]["message"]

    refused = httpx.post(f"{url}/lora-adapters", json=[{"id": 1, "scale": 1}])
    assert refused.status_code == 400
    assert "[0].id" in refused.json()["error"]["message"]
    not_a_list = httpx.post(f"{url}/lora-adapters", json={"id": 0, "scale": 1})
    assert not_a_list.status_code == 400
    assert not_a_list.json()["error"]["message"] == "Request body must be an array"
    # Nothing was changed by the refused calls.
    assert [a["scale"] for a in httpx.get(f"{url}/lora-adapters").json()] == [1.0]


def test_adapters_and_their_scales_survive_a_sleep(files: tuple[Path, Path]) -> None:
    base, adapter = files
    args = ("--lora-scaled", f"{adapter}:0.5", "--sleep-idle-seconds", "1")
    with worker(base, *args) as child:
        _set_scale(child.url, 1.0)
        awake = _complete(child.url)
        child.read_until("sleeping")  # the weights and the adapters are freed
        assert [a["scale"] for a in httpx.get(f"{child.url}/lora-adapters").json()] == [1.0]
        assert _complete(child.url) == awake  # loaded again, at the scale POSTed before
