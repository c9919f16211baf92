"""Whole downloads in-process, through the real huggingface_hub client, against the fake hub."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from huggingface_hub import try_to_load_from_cache

from corral.hub.cache_scan import scan_cache
from corral.hub.remote_preset import cached_preset
from downloads.plan import DownloadError, DownloadPlan, PlannedFile
from downloads.runner import DownloadResult, ProgressCallback, run_download
from tests.support.fakes.fake_hub import FakeHub, HubFile

REPO = "acme/tiny-GGUF"
REPO_DIR = "models--acme--tiny-GGUF"


def download(
    hub: FakeHub,
    cache: Path,
    reference: str,
    *,
    token: str | None = None,
    on_progress: ProgressCallback | None = None,
) -> DownloadResult:
    return run_download(reference, cache, endpoint=hub.url, token=token, on_progress=on_progress)


def test_default_tag_and_projector_land_in_huggingface_hub_layout(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    q4, q8, projector = gguf_bytes
    commit = hub.add_repo(
        REPO,
        {
            "tiny-Q8_0.gguf": q8,
            "tiny-Q4_K_M.gguf": q4,
            "mmproj-tiny-F16.gguf": projector,
            "README.md": HubFile(b"# tiny\n", lfs=False),
        },
    )
    reports: list[tuple[str, int]] = []

    def progress(plan: DownloadPlan, file: PlannedFile, done: int) -> None:
        reports.append((file.path, done))

    result = download(hub, cache, REPO, on_progress=progress)

    assert result.plan.name == f"{REPO}:Q4_K_M"
    assert [f.path for f in result.plan.files] == ["tiny-Q4_K_M.gguf", "mmproj-tiny-F16.gguf"]
    assert hub.transfers_of(f"{REPO}/tiny-Q8_0.gguf") == []
    snapshot = cache / REPO_DIR / "snapshots" / commit
    link = snapshot / "tiny-Q4_K_M.gguf"
    sha256 = hub.file(REPO, "tiny-Q4_K_M.gguf").sha256
    assert os.readlink(link) == f"../../blobs/{sha256}"
    assert link.read_bytes() == q4
    assert (cache / REPO_DIR / "refs" / "main").read_text() == commit
    assert not list((cache / REPO_DIR / "blobs").glob("*.incomplete"))
    # Progress: from zero, ending at the size, for each file.
    assert reports[0] == ("tiny-Q4_K_M.gguf", 0)
    assert ("tiny-Q4_K_M.gguf", len(q4)) in reports
    assert reports[-1] == ("mmproj-tiny-F16.gguf", len(projector))
    # Shared with the other tools: huggingface_hub and the router's cache listing find it.
    assert try_to_load_from_cache(REPO, "tiny-Q4_K_M.gguf", cache_dir=cache) == str(link)
    [model] = scan_cache(cache)
    assert (model.name, model.mmproj) == (f"{REPO}:Q4_K_M", snapshot / "mmproj-tiny-F16.gguf")


@pytest.mark.parametrize(
    ("files", "reference", "expected"),
    [
        (["m-Q8_0.gguf", "m-F16.gguf"], REPO, "m-Q8_0.gguf"),
        (["m-F16.gguf", "m-Q5_K_S.gguf"], REPO, "m-F16.gguf"),
        (["m-Q8_0.gguf", "m-Q4_K_M.gguf"], f"{REPO}:q8_0", "m-Q8_0.gguf"),
    ],
)
def test_tag_resolution(
    hub: FakeHub,
    cache: Path,
    gguf_bytes: list[bytes],
    files: list[str],
    reference: str,
    expected: str,
) -> None:
    hub.add_repo(REPO, {name: gguf_bytes[i] for i, name in enumerate(files)})
    result = download(hub, cache, reference)
    assert [f.path for f in result.plan.files] == [expected]


def test_every_shard_of_a_split_model_is_fetched(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    shards = {f"m-Q8_0-0000{i}-of-00003.gguf": gguf_bytes[i - 1][:5000] for i in (1, 2, 3)}
    hub.add_repo(REPO, {**shards, "m-Q4_0.gguf": gguf_bytes[0]})
    result = download(hub, cache, f"{REPO}:Q8_0")
    assert sorted(path.name for path in result.paths) == sorted(shards)
    assert all(path.read_bytes() == shards[path.name] for path in result.paths)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("acme/missing-GGUF", "repository 'acme/missing-GGUF' not found"),
        (f"{REPO}:Q2_K", "no GGUF model with tag Q2_K (available: Q4_K_M, Q8_0)"),
        ("acme/no-gguf", "has no GGUF model"),
    ],
)
def test_unknown_repositories_and_tags_fail_clearly(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes], reference: str, message: str
) -> None:
    hub.add_repo(REPO, {"m-Q4_K_M.gguf": gguf_bytes[0], "m-Q8_0.gguf": gguf_bytes[1]})
    hub.add_repo("acme/no-gguf", {"model.safetensors": b"x"})
    with pytest.raises(DownloadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        download(hub, cache, reference)
    assert not (cache / REPO_DIR).exists()


def test_a_partial_file_is_resumed_with_a_range_request(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    model = gguf_bytes[0]
    hub.add_repo(REPO, {"m-Q4_K_M.gguf": model})
    sha256 = hub.file(REPO, "m-Q4_K_M.gguf").sha256
    blobs = cache / REPO_DIR / "blobs"
    blobs.mkdir(parents=True)
    kept = 100_000
    (blobs / f"{sha256}.incomplete").write_bytes(model[:kept])  # what an interrupted run leaves

    result = download(hub, cache, REPO)

    [transfer] = hub.transfers_of(f"{REPO}/m-Q4_K_M.gguf")
    assert (transfer.start, transfer.sent) == (kept, len(model) - kept)
    assert [r.range for r in hub.requests if r.path.startswith("/lfs/")] == [f"bytes={kept}-"]
    assert result.transferred == len(model) - kept
    assert result.paths[0].read_bytes() == model


def test_a_partial_that_is_not_a_prefix_fails_verification_and_is_removed(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    hub.add_repo(REPO, {"m-Q4_K_M.gguf": gguf_bytes[0]})
    sha256 = hub.file(REPO, "m-Q4_K_M.gguf").sha256
    partial = cache / REPO_DIR / "blobs" / f"{sha256}.incomplete"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"garbage" * 100)
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        download(hub, cache, REPO)
    assert not partial.exists()
    # The next try starts from zero and succeeds.
    assert download(hub, cache, REPO).paths[0].read_bytes() == gguf_bytes[0]


@pytest.mark.parametrize("lfs", [True, False])
def test_a_corrupt_transfer_is_refused_and_removed(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes], lfs: bool
) -> None:
    hub.add_repo(REPO, {"m-Q4_K_M.gguf": HubFile(gguf_bytes[0], lfs=lfs, corrupt=True)})
    with pytest.raises(DownloadError, match=("sha256" if lfs else "git-sha1") + " mismatch"):
        download(hub, cache, REPO)
    blobs = cache / REPO_DIR / "blobs"
    assert list(blobs.iterdir()) == []
    assert not (cache / REPO_DIR / "snapshots").exists()
    assert scan_cache(cache) == []


def test_a_file_stored_without_lfs_is_verified_by_its_git_id(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    hub.add_repo(REPO, {"m-Q4_K_M.gguf": HubFile(gguf_bytes[0], lfs=False)})
    result = download(hub, cache, REPO)
    assert result.paths[0].read_bytes() == gguf_bytes[0]
    assert os.readlink(result.paths[0]).endswith(hub.file(REPO, "m-Q4_K_M.gguf").git_sha1)


def test_files_already_in_the_cache_are_not_fetched_again(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    hub.add_repo(REPO, {"m-Q4_K_M.gguf": gguf_bytes[0]})
    download(hub, cache, REPO)
    again = download(hub, cache, REPO)
    assert again.transferred == 0
    assert len(hub.transfers) == 1


def test_not_enough_disk_space_fails_before_any_transfer(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    huge = HubFile(gguf_bytes[0], advertised_size=1 << 60)
    hub.add_repo(REPO, {"m-Q4_K_M.gguf": huge})
    with pytest.raises(
        DownloadError,
        match=rf"not enough free disk space in {cache}: {REPO}:Q4_K_M needs 1152921.5 TB, only",
    ):
        download(hub, cache, REPO)
    assert hub.transfers == []


def test_the_token_goes_to_the_hub_and_never_to_the_cdn(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    hub.add_repo(REPO, {"m-Q4_K_M.gguf": gguf_bytes[0]})
    download(hub, cache, REPO, token="hf_secret")
    to_hub = [r for r in hub.requests if not r.path.startswith("/lfs/")]
    to_cdn = [r for r in hub.requests if r.path.startswith("/lfs/")]
    assert to_hub
    assert to_cdn
    assert {r.authorization for r in to_hub} == {"Bearer hf_secret"}
    assert {r.authorization for r in to_cdn} == {None}


def test_a_new_commit_keeps_the_tags_fetched_before_it(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    q8, q4 = gguf_bytes[0], gguf_bytes[1]
    hub.add_repo(REPO, {"m-Q8_0.gguf": q8}, commit="a" * 40)
    download(hub, cache, f"{REPO}:Q8_0")
    hub.add_repo(REPO, {"m-Q8_0.gguf": q8, "m-Q4_K_M.gguf": q4}, commit="b" * 40)
    download(hub, cache, f"{REPO}:Q4_K_M")
    assert (cache / REPO_DIR / "refs" / "main").read_text() == "b" * 40
    assert [m.name for m in scan_cache(cache)] == [f"{REPO}:Q4_K_M", f"{REPO}:Q8_0"]
    assert len(hub.transfers) == 2  # Q8_0 was not fetched again


def test_a_repository_with_a_root_preset_ini_is_a_remote_preset(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    # As llama-server's download plan: the preset alone, whatever the tag and the GGUFs.
    preset = b"[chat]\nhf-repo = acme/tiny-GGUF:Q8_0\n"
    hub.add_repo(
        "acme/presets", {"preset.ini": HubFile(preset, lfs=False), "m-Q8_0.gguf": gguf_bytes[0]}
    )
    result = download(hub, cache, "acme/presets:Q8_0")
    assert result.plan.name == "acme/presets:preset"
    assert [path.read_bytes() for path in result.paths] == [preset]
    assert hub.transfers_of("acme/presets/m-Q8_0.gguf") == []
    assert cached_preset(cache, "acme/presets") == result.paths[0]
    assert cached_preset(cache, REPO) is None
