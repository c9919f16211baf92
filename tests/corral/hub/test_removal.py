"""Removing one model from the hub cache, and sweeping stale partial downloads."""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from pathlib import Path

import pytest

from corral.hub.cache_scan import scan_cache
from corral.hub.removal import NotInCache, remove_cached_model, sweep_stale_partials
from tests.support.files.hub_cache import COMMIT, REPO, lay_out


def blob_names(repo_dir: Path) -> set[str]:
    return {path.name for path in (repo_dir / "blobs").iterdir()}


def sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def test_removing_a_tag_keeps_the_other_tags_and_their_shared_projector(tmp_path: Path) -> None:
    repo_dir = lay_out(
        tmp_path,
        {
            "m-Q4_K_M.gguf": b"q4",
            "m-Q8_0.gguf": b"q8",
            "mmproj-m-F16.gguf": b"projector",
            "README.md": b"readme",
        },
    )
    removed = remove_cached_model(tmp_path, f"{REPO}:q8_0")

    snapshot = repo_dir / "snapshots" / COMMIT
    assert sorted(path.name for path in removed) == sorted(["m-Q8_0.gguf", sha(b"q8")])
    assert sorted(path.name for path in snapshot.iterdir()) == [
        "README.md",
        "m-Q4_K_M.gguf",
        "mmproj-m-F16.gguf",
    ]
    assert blob_names(repo_dir) == {sha(b"q4"), sha(b"projector"), sha(b"readme")}
    assert [model.name for model in scan_cache(tmp_path)] == [f"{REPO}:Q4_K_M"]

    # The last tag takes its projector along; the README keeps the repository folder.
    remove_cached_model(tmp_path, f"{REPO}:Q4_K_M")
    assert [path.name for path in snapshot.iterdir()] == ["README.md"]
    assert blob_names(repo_dir) == {sha(b"readme")}


def test_removing_the_only_model_removes_the_repository_folder(tmp_path: Path) -> None:
    shards = {f"big/m-Q8_0-0000{i}-of-00002.gguf": f"shard {i}".encode() for i in (1, 2)}
    repo_dir = lay_out(tmp_path, {**shards, "big/mmproj-F16.gguf": b"projector"})
    removed = remove_cached_model(tmp_path, f"{REPO}:Q8_0")
    assert len(removed) == 6  # two shards and a projector, each a link and a blob
    assert not repo_dir.exists()
    assert tmp_path.exists()


def test_a_blob_another_tag_still_uses_is_kept(tmp_path: Path) -> None:
    repo_dir = lay_out(tmp_path, {"m-Q8_0.gguf": b"same", "copy-Q4_0.gguf": b"same"})
    remove_cached_model(tmp_path, f"{REPO}:Q8_0")
    assert blob_names(repo_dir) == {sha(b"same")}
    assert (repo_dir / "snapshots" / COMMIT / "copy-Q4_0.gguf").read_bytes() == b"same"


def test_every_snapshot_loses_the_tag_so_an_older_one_cannot_resurface(tmp_path: Path) -> None:
    lay_out(tmp_path, {"m-Q8_0.gguf": b"old q8", "m-Q4_0.gguf": b"q4"}, commit="a" * 40)
    repo_dir = lay_out(tmp_path, {"m-Q8_0.gguf": b"new q8"}, commit="b" * 40)
    remove_cached_model(tmp_path, f"{REPO}:Q8_0")
    assert [model.name for model in scan_cache(tmp_path)] == [f"{REPO}:Q4_0"]
    assert blob_names(repo_dir) == {sha(b"q4")}


def test_links_leading_outside_the_repository_lose_only_the_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside.gguf"
    outside.write_bytes(b"not the cache's")
    cache = tmp_path / "cache"
    repo_dir = lay_out(cache, {"m-Q4_0.gguf": b"q4"})
    link = repo_dir / "snapshots" / COMMIT / "m-Q8_0.gguf"
    link.symlink_to(outside)
    sneaky = repo_dir / "snapshots" / COMMIT / "x-Q8_0.gguf"
    sneaky.symlink_to("../../../../outside.gguf")
    removed = remove_cached_model(cache, f"{REPO}:Q8_0")
    assert sorted(removed) == sorted([link, sneaky])
    assert outside.read_bytes() == b"not the cache's"


def test_a_repository_folder_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    elsewhere = lay_out(tmp_path / "elsewhere", {"m-Q8_0.gguf": b"q8"})
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / elsewhere.name).symlink_to(elsewhere)
    with pytest.raises(NotInCache):
        remove_cached_model(cache, f"{REPO}:Q8_0")
    assert (elsewhere / "snapshots" / COMMIT / "m-Q8_0.gguf").read_bytes() == b"q8"


@pytest.mark.parametrize("name", [f"{REPO}:Q2_K", "acme/other:Q8_0", REPO])
def test_nothing_to_remove_is_an_error(tmp_path: Path, name: str) -> None:
    lay_out(tmp_path, {"m-Q8_0.gguf": b"q8"})
    with pytest.raises(NotInCache):
        remove_cached_model(tmp_path, name)


def test_stale_partials_are_swept_unless_fresh_or_locked(tmp_path: Path) -> None:
    blobs = lay_out(tmp_path, {"m-Q8_0.gguf": b"q8"}) / "blobs"
    etags = ["1" * 64, "2" * 64, "3" * 64, "4" * 64]
    stale = blobs / f"{etags[0]}.incomplete"
    fresh = blobs / f"{etags[1]}.incomplete"
    locked = blobs / f"{etags[2]}.incomplete"
    theirs = blobs / f"{etags[3]}.0a1b2c3d.incomplete"  # huggingface_hub's own naming
    now = time.time()
    for path in (stale, fresh, locked, theirs):
        path.write_bytes(b"partial")
        age = 3600.0 if path is fresh else 2 * 86400.0
        os.utime(path, (now - age, now - age))
    lock = tmp_path / ".locks" / blobs.parent.name / f"{etags[2]}.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # a download is writing it
        swept = sweep_stale_partials(tmp_path, now=now)
    assert sorted(swept) == sorted([stale, theirs])
    assert fresh.exists()
    assert locked.exists()
    assert (blobs / sha(b"q8")).exists()
