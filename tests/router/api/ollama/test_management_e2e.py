"""``/api/pull``, ``/api/copy`` and ``/api/delete`` through the ``ollama`` client: a pull is the
router's download child fetching from the (fake, loopback) hub with Ollama's progress lines; a
copy is one more name; a delete removes the hub-cache model's files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import ollama
import pytest

from tests.support.fakes.fake_hub import FakeHub
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

REPO = "acme/tiny-GGUF"
PULLED = f"hf.co/{REPO}:Q4_K_M"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def router(hub: FakeHub, cache: Path, tmp_path: Path, models_dir: Path) -> Iterator[RouterProcess]:
    hub.add_repo(REPO, {"tiny-Q4_K_M.gguf": write_tiny_gguf(tmp_path / "q4.gguf").read_bytes()})
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    args = ["--models-dir", str(models_dir), "--ctx-size", "512"]
    with running_router(args, env) as process:
        yield process


@pytest.fixture
def client(router: RouterProcess) -> Iterator[ollama.Client]:
    with ollama.Client(host=router.url, timeout=120) as official:
        yield official


def test_pull_streams_progress_then_the_model_answers(client: ollama.Client, cache: Path) -> None:
    lines = list(client.pull(PULLED, stream=True))
    statuses = [line.status for line in lines]
    assert statuses[0] == "pulling manifest"
    assert statuses[-1] == "success"
    files = [line for line in lines if line.digest == "tiny-Q4_K_M.gguf"]
    assert files
    assert files[-1].completed == files[-1].total
    assert files[-1].total == (cache.parent / "q4.gguf").stat().st_size
    assert PULLED in {model.model for model in client.list().models}
    assert client.chat(model=PULLED, messages=HI, options={"num_predict": 2}).done
    # Pulled already: nothing to fetch, and the same last line; without a tag, the same model.
    assert client.pull(PULLED).status == "success"
    untagged = f"hf.co/{REPO}"
    assert client.pull(untagged).status == "success"
    assert client.chat(model=untagged, messages=HI, options={"num_predict": 2}).done


def test_pulling_a_missing_repository_ends_with_an_error(client: ollama.Client) -> None:
    with pytest.raises(ollama.ResponseError) as caught:
        client.pull("hf.co/acme/missing-GGUF:Q4_K_M")
    assert caught.value.error
    with pytest.raises(ollama.ResponseError) as caught:
        client.pull("not a repo")
    assert caught.value.status_code == 400


def test_copy_is_a_name_and_delete_removes_it_then_the_files(
    client: ollama.Client, cache: Path
) -> None:
    client.pull(PULLED)
    assert client.copy(PULLED, "tiny-backup").status == "success"
    names = {model.model for model in client.list().models}
    assert {"tiny-backup:latest", PULLED} <= names
    assert client.chat(model="tiny-backup", messages=HI, options={"num_predict": 2}).done
    with pytest.raises(ollama.ResponseError) as caught:
        client.copy("nobody", "other")
    assert caught.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as caught:
        client.copy(PULLED, "alpha")  # the name of a model already
    assert caught.value.status_code == 400

    assert client.delete("tiny-backup").status == "success"
    assert PULLED in {model.model for model in client.list().models}
    assert client.delete(PULLED).status == "success"
    assert PULLED not in {model.model for model in client.list().models}
    assert not list(cache.glob("models--acme--tiny-GGUF/blobs/*"))
    with pytest.raises(ollama.ResponseError) as caught:
        client.delete(PULLED)
    assert caught.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as caught:
        client.delete("alpha")  # from --models-dir: not Corral's to delete
    assert caught.value.status_code == 400
