"""Split models (``name-00001-of-00003.gguf`` …) end to end, as llama-server loads them: from the
hub cache, from ``--models-dir``, from ``-m`` and ``-hf … --hf-file``; listed once with their
total size, removed whole, downloaded whole. A real router, real workers loading a real
3-shard GGUF, a fake hub on loopback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.fakes.fake_hub import FakeHub
from tests.support.files.hub_cache import lay_out
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.model_events import EventReader
from tests.support.router_process import RouterProcess, running_router

REPO = "acme/split-GGUF"
MODEL = f"{REPO}:Q8_0"
SHARDS = tuple(f"split/tiny-Q8_0-0000{i}-of-00003.gguf" for i in (1, 2, 3))
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A tiny model split three ways, by the file names a hub repository would give them."""
    directory = tmp_path_factory.mktemp("split")
    first = write_tiny_gguf(directory / "tiny-Q8_0.gguf", shards=3)
    files = sorted(first.parent.glob("tiny-Q8_0-*.gguf"))
    assert [f"split/{path.name}" for path in files] == list(SHARDS)
    return {f"split/{path.name}": path.read_bytes() for path in files}


def answers(router: RouterProcess, model: str) -> str:
    reply = router.client.post("/v1/chat/completions", json={"model": model, **CHAT})
    assert reply.status_code == 200, reply.text
    content: str = reply.json()["choices"][0]["message"]["content"]
    return content


def test_a_split_model_in_the_cache_and_in_models_dir_loads_lists_once_and_is_removed_whole(
    tmp_path: Path, cache: Path, shards: dict[str, bytes]
) -> None:
    repo_dir = lay_out(cache, shards, repo=REPO)
    models_dir = tmp_path / "models"
    (models_dir / "big").mkdir(parents=True)
    for file, data in shards.items():
        (models_dir / "big" / Path(file).name).write_bytes(data)
    total = sum(map(len, shards.values()))
    args = ["--models-dir", str(models_dir), "--ctx-size", "256"]
    with running_router(args, {"HF_HUB_CACHE": str(cache)}) as router:
        models = router.models()
        assert sorted(models) == [MODEL, "big"]  # one model each, not one per shard
        assert models[MODEL]["size"] == models["big"]["size"] == total
        assert answers(router, MODEL)
        assert answers(router, "big")

        events = EventReader(router)
        assert router.client.delete("/models", params={"model": MODEL}).json() == {"success": True}
        events.wait_for(MODEL, "model_remove")
        events.close()
        assert sorted(router.models()) == ["big"]
    # Every shard's link and blob went (the repository's folder with them, nothing else in it).
    assert not repo_dir.exists()


@pytest.mark.parametrize("how", ["hf", "hf-file", "m"])
def test_a_split_model_named_on_the_command_line_loads_from_its_snapshot_link(
    cache: Path, shards: dict[str, bytes], how: str
) -> None:
    # Snapshot files link to blobs/<sha256>; llama.cpp finds shards 2 and 3 beside the path it
    # is given, so the worker must get the link, not the blob it points at.
    repo_dir = lay_out(cache, shards, repo=REPO)
    first = next((repo_dir / "snapshots").iterdir()) / SHARDS[0]
    assert os.path.islink(first)
    args = {
        "hf": ["-hf", MODEL],
        "hf-file": ["-hf", REPO, "--hf-file", SHARDS[0]],
        "m": ["-m", str(first)],
    }[how]
    with running_router([*args, "--ctx-size", "256"], {"HF_HUB_CACHE": str(cache)}) as router:
        (listed,) = router.models().values()
        assert listed["size"] == sum(map(len, shards.values()))
        assert answers(router, listed["id"])


def test_a_download_fetches_every_shard_then_the_model_answers(
    hub: FakeHub, cache: Path, tmp_path: Path, shards: dict[str, bytes]
) -> None:
    hub.add_repo(REPO, dict(shards))
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    with running_router(["--ctx-size", "256"], env) as router:
        events = EventReader(router)
        assert router.client.post("/models", json={"model": MODEL}).json() == {"success": True}
        finished = events.wait_for(MODEL, "download_finished")
        assert finished["data"] == {"id": MODEL}
        events.wait_for("*", "models_reload")
        events.close()
        for file in SHARDS:
            assert len(hub.transfers_of(f"{REPO}/{file}")) == 1
        snapshot = next((cache / "models--acme--split-GGUF" / "snapshots").iterdir())
        assert {file: (snapshot / file).read_bytes() for file in SHARDS} == shards
        assert router.models()[MODEL]["size"] == sum(map(len, shards.values()))
        assert answers(router, MODEL)
