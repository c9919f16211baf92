"""``corral pull``, ``ls``, ``rm`` (on the cache, against the fake hub) and ``ps`` (a router)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from corral.hub.cache_scan import resolve_cached_model, scan_cache
from corral.hub.sizes import human_size
from tests.support.fakes.fake_hub import FakeHub
from tests.support.router_process import RouterProcess, running_router

REPO = "acme/tiny-GGUF"
Q8 = f"{REPO}:Q8_0"
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _clean(env: dict[str, str]) -> dict[str, str]:
    foreign = ("HF_", "HUGGINGFACE_", "LLAMA_")  # the developer's cache, router and key
    return {**{k: v for k, v in os.environ.items() if not k.startswith(foreign)}, **env}


def corral(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = _clean(env)
    return subprocess.run(
        [sys.executable, "-m", "router", *args],
        env=clean,
        stdin=subprocess.DEVNULL,
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
    env["LLAMA_ARG_PORT"] = "9"  # no router there, whatever else runs on this machine
    repo_dir = cache / "models--acme--tiny-GGUF"

    pulled = corral(["pull", f"{REPO}:q8_0"], env)
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.startswith(f"{Q8}: {repo_dir}/snapshots/")
    assert "tiny-Q8_0.gguf [##############################] 100%" in pulled.stderr
    assert hub.transfers_of(f"{REPO}/tiny-Q4_K_M.gguf") == []

    listed = corral(["ls"], env)
    header, row = listed.stdout.splitlines()
    assert header.split() == ["MODEL", "SOURCE", "SIZE", "PATH"]  # no router: no STATUS
    assert row.split()[:4] == [Q8, "cache", *human_size(len(gguf_bytes[1])).split()]

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
    assert header.split() == ["MODEL", "STATUS", "MEMORY", "(RSS)", "/", "DOWNLOADED", "VRAM"]
    [alpha] = [row.split() for row in rows]
    assert alpha[:2] == ["alpha", "loaded"]
    assert alpha[3] in ("MB", "GB")
    assert alpha[4] == "-"  # no GPU here: nothing in VRAM, and no GPU table


def test_ps_shows_each_gpus_memory_as_the_router_sees_it(models_dir: Path) -> None:
    # The router's fake inventory (a test seam); the model runs on the CPU, as it must here.
    env = {"CORRAL_FAKE_DEVICES": "CUDA0=20GiB/24GiB,CUDA1=8GiB/8GiB"}
    args = ["--models-dir", str(models_dir), "--ctx-size", "512", "--n-gpu-layers", "0"]
    with running_router(args, env=env) as router:
        assert router.client.post("/v1/chat/completions", json={"model": "alpha", **CHAT})
        listing = router.client.get("/models").json()
        assert [device["name"] for device in listing["devices"]] == ["CUDA0", "CUDA1"]
        assert listing["devices"][0] == {
            "name": "CUDA0", "description": "fake",
            "total": 24 << 30, "free": 20 << 30, "used": 4 << 30,
        }  # fmt: skip
        done = corral(["ps", "--url", router.url], {})
    assert done.returncode == 0, done.stderr
    models, gpus = done.stdout.split("\n\n")
    assert models.splitlines()[1].split()[0::4] == ["alpha", "-"]
    assert [line.split() for line in gpus.splitlines()] == [
        ["GPU", "USED", "FREE", "TOTAL", "DESCRIPTION"],
        ["CUDA0", *human_size(4 << 30).split(), *human_size(20 << 30).split(),
         *human_size(24 << 30).split(), "fake"],
        ["CUDA1", "0", "B", *human_size(8 << 30).split(), *human_size(8 << 30).split(), "fake"],
    ]  # fmt: skip


def test_ps_says_when_no_router_answers() -> None:
    done = corral(["ps", "--url", "http://127.0.0.1:9"], {})
    assert done.returncode == 1
    assert "cannot reach http://127.0.0.1:9" in done.stderr


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1]


def test_ps_finds_the_router_by_llama_arg_port_and_says_where_the_key_goes(
    models_dir: Path,
) -> None:
    with running_router(["--models-dir", str(models_dir), "--api-key", "sesame"]) as router:
        env = {"LLAMA_ARG_PORT": _port(router.url)}
        refused = corral(["ps"], env)
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            f"corral ps: http://127.0.0.1:{_port(router.url)} wants an API key: "
            "pass it with --api-key KEY or set LLAMA_API_KEY"
        )
        wrong = corral(["ps", "--api-key", "nope"], env)
        assert "refused the API key" in wrong.stderr
        allowed = corral(["ps"], {**env, "LLAMA_API_KEY": "sesame"})
        assert allowed.returncode == 0, allowed.stderr
        assert allowed.stdout.split()[0] == "MODEL"


def test_ls_says_a_keyed_router_wants_a_key_and_url_may_leave_out_the_scheme(
    models_dir: Path, cache: Path
) -> None:
    with running_router(["--models-dir", str(models_dir), "--api-key", "sesame"]) as router:
        bare = f"127.0.0.1:{_port(router.url)}"  # as a newcomer types it: http is meant
        env = {"HF_HUB_CACHE": str(cache)}  # an empty cache: the router is all there is
        refused = corral(["ls", "--url", bare], env)
        assert refused.returncode == 1
        assert refused.stderr.splitlines()[0] == (
            f"corral ls: http://{bare} wants an API key: "
            "pass it with --api-key KEY or set LLAMA_API_KEY"
        )
        assert "no router answers" not in refused.stderr
        listed = corral(["ls", "--url", bare, "--api-key", "sesame"], env)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.split()[:5] == ["MODEL", "SOURCE", "SIZE", "STATUS", "PATH"]
        allowed = corral(["ps", "--url", bare, "--api-key", "sesame"], env)
        assert allowed.returncode == 0, allowed.stderr


def test_ls_lists_every_source_and_rm_asks_before_deleting_a_served_model(
    hub: FakeHub, cache: Path, tmp_path: Path, gguf_bytes: list[bytes], models_dir: Path
) -> None:
    hub.add_repo(REPO, {"tiny-Q8_0.gguf": gguf_bytes[1]})
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    assert corral(["pull", Q8], env).returncode == 0
    preset = tmp_path / "models.ini"
    preset.write_text(f"[custom]\nmodel = {models_dir / 'beta.gguf'}\n", encoding="utf-8")
    sources = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    size = human_size((models_dir / "alpha.gguf").stat().st_size)
    with running_router(sources, {"HF_HUB_CACHE": str(cache)}) as router:
        loaded = router.client.post("/models/load", json={"model": Q8})
        assert loaded.json() == {"success": True}
        router.wait_for_log("model loaded", model=Q8)
        env["LLAMA_ARG_PORT"] = _port(router.url)

        listed = corral(["ls", *sources], env)
        assert listed.returncode == 0, listed.stderr
        rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:]}
        assert listed.stdout.split()[:5] == ["MODEL", "SOURCE", "SIZE", "STATUS", "PATH"]
        assert rows["alpha"][1:5] == ["models_dir", *size.split(), "unloaded"]
        assert rows["custom"][1:2] == ["preset"]
        assert rows[Q8][1:5] == ["cache", *human_size(len(gguf_bytes[1])).split(), "loaded"]

        # Without the flags, what the router serves from its own --models-dir is listed too.
        bare = corral(["ls"], env)
        assert bare.returncode == 0, bare.stderr
        served = {line.split()[0]: line.split() for line in bare.stdout.splitlines()[1:]}
        assert served["alpha"][1:5] == ["models_dir", *size.split(), "unloaded"]
        assert served["alpha"][-1] == str(models_dir / "alpha.gguf")
        assert served[Q8][1:2] == ["cache"]

        refused = corral(["rm", Q8], env)
        assert refused.returncode == 1
        assert f"is serving {Q8} (loaded)" in refused.stderr
        assert "pass --force" in refused.stderr
        assert _answered_on_a_terminal(["rm", Q8], env, "n\n").returncode == 1
        assert resolve_cached_model(scan_cache(cache), Q8) is not None  # kept both times

        forced = corral(["rm", Q8, "--force"], env)
        assert forced.returncode == 0, forced.stderr
        assert resolve_cached_model(scan_cache(cache), Q8) is None


def _answered_on_a_terminal(
    args: list[str], env: dict[str, str], answer: str
) -> subprocess.CompletedProcess[str]:
    """Run corral with a pty as stdin, typing ``answer`` when it asks."""
    master, slave = pty.openpty()
    with os.fdopen(master, "wb", buffering=0) as keyboard:
        process = subprocess.Popen(
            [sys.executable, "-m", "router", *args],
            env=_clean(env),
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(slave)
        keyboard.write(answer.encode())  # the pty buffers it until input() reads
        stdout, stderr = process.communicate(timeout=60)
    assert "[y/N]" in stdout + stderr
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def test_serve_hf_downloads_a_missing_model_before_serving_and_reuses_the_cache(
    hub: FakeHub, cache: Path, tmp_path: Path, gguf_bytes: list[bytes]
) -> None:
    hub.add_repo(REPO, {"tiny-Q8_0.gguf": gguf_bytes[1]})
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    with running_router(["-hf", f"{REPO}:q8_0"], env) as router:
        router.wait_for_log("model loaded", model=Q8)
        lines = [str(r.get("event")) for r in router.records]
        assert any(line.startswith("tiny-Q8_0.gguf [###") for line in lines)  # the progress
        download = lines.index("downloaded")
        assert download < lines.index("corral listening")  # before serving
    assert len(hub.transfers_of(f"{REPO}/tiny-Q8_0.gguf")) == 1

    with running_router(["-hf", f"{REPO}:q8_0"], env) as router:
        router.wait_for_log("model loaded", model=Q8)
        assert not [r for r in router.records if r.get("event") == "downloaded"]
    assert len(hub.transfers_of(f"{REPO}/tiny-Q8_0.gguf")) == 1  # cached: no second download


def test_serve_hf_downloads_the_hfd_draft_too(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    hub.add_repo(REPO, {"tiny-Q8_0.gguf": gguf_bytes[1]})
    hub.add_repo("acme/draft-GGUF", {"small-Q4_0.gguf": gguf_bytes[2]})
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url}
    with running_router(["-hf", f"{REPO}:q8_0", "-hfd", "acme/draft-GGUF"], env) as router:
        router.wait_for_log("model loaded", model=Q8)
        assert "--model-draft" in router.models()[Q8]["status"]["args"]
    assert len(hub.transfers_of("acme/draft-GGUF/small-Q4_0.gguf")) == 1


def test_serve_hf_says_why_when_the_download_fails(hub: FakeHub, cache: Path) -> None:
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url}
    done = subprocess.run(
        [sys.executable, "-m", "router", "serve", "--port", "0", "-hf", "acme/missing"],
        env=_clean(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    failure = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [record] = [r for r in failure if r["event"] == "cannot download a --hf-repo model"]
    assert "repository 'acme/missing' not found" in record["error"]
