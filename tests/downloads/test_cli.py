"""``corral pull``, ``ls``, ``rm`` (on the cache, against the fake hub) and ``ps`` (a router)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from corral.hub.sizes import human_size
from tests.support.fake_hub import FakeHub
from tests.support.router_process import RouterProcess

REPO = "acme/tiny-GGUF"
Q8 = f"{REPO}:Q8_0"
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def corral(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    clean.pop("LLAMA_CACHE", None)
    clean.pop("LLAMA_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "router", *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_pull_ls_and_rm_work_on_the_cache_without_a_router(
    hub: FakeHub, cache: Path, tmp_path: Path, gguf_bytes: list[bytes]
) -> None:
    hub.add_repo(REPO, {"tiny-Q4_K_M.gguf": gguf_bytes[0], "tiny-Q8_0.gguf": gguf_bytes[1]})
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    repo_dir = cache / "models--acme--tiny-GGUF"

    pulled = corral(["pull", f"{REPO}:q8_0"], env)
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.startswith(f"{Q8}: {repo_dir}/snapshots/")
    assert "tiny-Q8_0.gguf [##############################] 100%" in pulled.stderr
    assert hub.transfers_of(f"{REPO}/tiny-Q4_K_M.gguf") == []

    listed = corral(["ls"], env)
    assert listed.stdout.split()[:3] == [Q8, *human_size(len(gguf_bytes[1])).split()]

    missing = corral(["pull", "acme/missing"], env)
    assert missing.returncode == 1
    assert "repository 'acme/missing' not found" in missing.stderr

    assert corral(["rm", Q8], env).stdout == f"removed {Q8} (2 files)\n"
    assert "no models" in corral(["ls"], env).stderr
    assert not repo_dir.exists()
    again = corral(["rm", Q8], env)
    assert again.returncode == 1
    assert "not in the hub cache" in again.stderr


def test_ps_lists_running_models_with_their_memory(router: RouterProcess) -> None:
    assert router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT}).is_success
    entry = router.models()["alpha"]
    assert entry["memory"]["rss"] > 1_000_000
    assert "memory" not in router.models()["beta"]

    done = corral(["ps", "--url", router.url], {})

    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["MODEL", "STATUS", "MEMORY", "(RSS)", "/", "DOWNLOADED"]
    [alpha] = [row.split() for row in rows]
    assert alpha[:2] == ["alpha", "loaded"]
    assert alpha[3] in ("MB", "GB")


def test_ps_says_when_no_router_answers() -> None:
    done = corral(["ps", "--url", "http://127.0.0.1:9"], {})
    assert done.returncode == 1
    assert "cannot reach http://127.0.0.1:9" in done.stderr
