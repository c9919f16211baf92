"""Presets, the hub cache, per-model options and reloads, through a running router."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.fakes.fake_hub import FakeHub, HubFile
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.model_events import EventReader
from tests.support.router_process import RouterProcess, running_router

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _chat(client: httpx.Client, model: str) -> int:
    return client.post("/v1/chat/completions", json={"model": model, **CHAT}).status_code


def test_preset_aliases_tags_and_options(models_dir: Path, tmp_path: Path) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(
        "[*]\nctx-size = 512\n\n"
        "[alpha]\nalias = first, a1\ntags = small,test\nc = 768\npin = on\n\n"
        "[gamma]\nmodel = " + str(models_dir / "beta.gguf") + "\nttl = 600\ntools = read_file\n"
    )
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    with running_router(args) as router:
        models = router.models()
        assert set(models) == {"alpha", "beta", "gamma"}
        alpha = models["alpha"]
        assert alpha["aliases"] == ["a1", "first"]
        assert alpha["tags"] == ["small", "test"]
        assert alpha["source"] == "preset"
        assert alpha["pinned"] is True
        assert models["gamma"]["ttl"] == 600
        assert (models["gamma"]["tools"], alpha["tools"]) == (["read_file"], None)
        assert "ctx-size = 768" in alpha["status"]["preset"]
        assert "--ctx-size" in alpha["status"]["args"]

        assert _chat(router.client, "first") == 200  # an alias reaches the model
        # llama.cpp rounds contexts up to a multiple of 256, hence those sizes.
        assert router.models()["alpha"]["meta"]["n_ctx"] == 768  # section beats [*]
        assert _chat(router.client, "beta") == 200
        assert router.models()["beta"]["meta"]["n_ctx"] == 512  # [*] applies to every model


def test_command_line_beats_presets_and_env_is_read(models_dir: Path, tmp_path: Path) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text("[alpha]\nctx-size = 768\n")
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset), "-c", "256"]
    with running_router(args, env={"LLAMA_ARG_N_PREDICT": "3"}) as router:
        assert _chat(router.client, "alpha") == 200
        alpha = router.models()["alpha"]
        assert alpha["meta"]["n_ctx"] == 256
        assert "--n-predict" in alpha["status"]["args"]


def test_memory_budget_evicts_to_fit_declared_sizes(models_dir: Path, tmp_path: Path) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text("[alpha]\nmemory = 600M\n\n[beta]\nmemory = 600M\n")
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    with running_router([*args, "--models-memory-max", "1G"]) as router:
        assert _chat(router.client, "alpha") == 200
        assert _chat(router.client, "beta") == 200  # 600M + 600M > 1G: alpha made room
        models = router.models()
        assert models["alpha"]["status"]["value"] == "unloaded"
        assert models["beta"]["status"]["value"] == "loaded"
        assert f"memory = {600 << 20}" in models["beta"]["status"]["preset"]
        families = {
            family.name: family
            for family in text_string_to_metric_families(router.client.get("/metrics").text)
        }
        assert families["corral_models_memory_max_bytes"].samples[0].value == 1 << 30
        counted = {
            sample.labels["model"]: sample.value
            for sample in families["corral_model_memory_bytes"].samples
        }
        assert counted == {"alpha": 600 << 20, "beta": 600 << 20}


def test_invalid_preset_stops_startup_with_a_clear_message(tmp_path: Path) -> None:
    preset = tmp_path / "bad.ini"
    preset.write_text("[alpha]\nctx-sise = 5\n")
    with pytest.raises(RuntimeError, match=r"section \[alpha\]: unknown key 'ctx-sise'"):
        RouterProcess(["--models-preset", str(preset)])


def test_hub_cache_models_are_served(tmp_path: Path) -> None:
    hub = _fake_cache(tmp_path)
    with running_router([], env={"HF_HUB_CACHE": str(hub)}) as router:
        entry = router.models()["acme/tiny-GGUF:Q8_0"]
        assert entry["source"] == "cache"
        assert entry["can_remove"] is True
        assert _chat(router.client, "acme/tiny-GGUF:Q8_0") == 200


def test_reload_keeps_unchanged_models_running(models_dir: Path, tmp_path: Path) -> None:
    directory = tmp_path / "models"
    directory.mkdir()
    for name in ("alpha", "beta"):
        os.symlink(models_dir / f"{name}.gguf", directory / f"{name}.gguf")
    preset = tmp_path / "models.ini"
    preset.write_text("[beta]\nctx-size = 256\n")
    args = ["--models-dir", str(directory), "--models-preset", str(preset)]
    with running_router(args) as router:
        events = EventReader(router)
        try:
            assert _chat(router.client, "alpha") == 200
            assert _chat(router.client, "beta") == 200
            pids = {
                child.cmdline()[child.cmdline().index("--alias") + 1]: child.pid
                for child in psutil.Process(router.process.pid).children()
            }
            os.symlink(models_dir / "alpha.gguf", directory / "delta.gguf")
            preset.write_text("[beta]\nctx-size = 320\n")  # beta's settings change

            models = router.client.get("/models", params={"reload": "1"}).json()["data"]
            statuses = {m["id"]: m["status"]["value"] for m in models}
            assert statuses == {"alpha": "loaded", "beta": "unloaded", "delta": "unloaded"}
            events.wait_for("*", "models_reload")
            assert psutil.Process(pids["alpha"]).is_running()  # the same worker, untouched

            # SIGHUP reloads too: a broken preset is refused and the old catalogue kept.
            preset.write_text("[beta]\nnot-an-option = 1\n")
            router.process.send_signal(signal.SIGHUP)
            failed = router.wait_for_log("reload failed, keeping the current models")
            assert "not-an-option" in failed["error"]
            assert set(router.models()) == {"alpha", "beta", "delta"}
        finally:
            events.close()


def _fake_cache(root: Path) -> Path:
    repo = root / "hub" / "models--acme--tiny-GGUF"
    snapshot = repo / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    write_tiny_gguf(snapshot / "tiny-Q8_0.gguf", name="tiny")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    return root / "hub"


def test_hf_repo_loads_a_cached_model_at_startup(tmp_path: Path) -> None:
    hub = _fake_cache(tmp_path)
    with running_router(["-hf", "acme/tiny-GGUF"], env={"HF_HUB_CACHE": str(hub)}) as router:
        router.wait_for_log("model loaded", model="acme/tiny-GGUF:Q8_0")


def test_hf_repo_missing_from_the_cache_is_a_startup_error_offline(tmp_path: Path) -> None:
    hub = _fake_cache(tmp_path)
    missing = "acme/other: not in the hub cache .*; --offline forbids downloading it"
    with pytest.raises(RuntimeError, match=missing):
        RouterProcess(["--hf-repo", "acme/other", "--offline"], env={"HF_HUB_CACHE": str(hub)})


def test_hf_repo_with_a_preset_ini_is_served_as_the_preset(tmp_path: Path, hub: FakeHub) -> None:
    # llama-server's remote presets: -hf on a repository with a root preset.ini.
    cache = _fake_cache(tmp_path)
    # Only upstream's whitelist of keys (docs/security.md): the context size is the user's call.
    preset = (
        b"[chat]\nhf-repo = acme/tiny-GGUF:Q8_0\ntemp = 0.5\n[other]\nhf-repo = acme/tiny-GGUF\n"
    )
    hub.add_repo("acme/presets", {"preset.ini": HubFile(preset, lfs=False)})
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    with running_router(["-hf", "acme/presets", "-c", "256"], env=env) as router:
        router.wait_for_log("using preset.ini from a hub repository", repo="acme/presets")
        assert {"chat", "other"} <= set(router.models())  # router mode: the sections are models
        reply = router.client.post("/tokenize", json={"model": "chat", "content": "hi"})
        assert reply.status_code == 200, reply.text
    # Offline, the cached preset is used again without asking the hub.
    asked = len(hub.requests)
    with running_router(["-hf", "acme/presets", "--offline"], env=env) as router:
        assert {"chat", "other"} <= set(router.models())
    assert len(hub.requests) == asked


def test_a_preset_s_tool_mode_generic_gives_its_model_tool_calls(
    models_dir: Path, tmp_path: Path
) -> None:
    """The tiny models' ChatML has no tool-call syntax: tools are answered in text, as
    llama-server answers them, unless the model's preset says ``tool-mode = generic``
    (docs/tool-calls.md)."""
    preset = tmp_path / "models.ini"
    preset.write_text("[*]\nctx-size = 2048\n\n[beta]\ntool-mode = generic\n")
    tool = {"type": "function", "function": {"name": "clock", "description": "The time now"}}
    body = {**CHAT, "tools": [tool], "tool_choice": "required", "max_tokens": 200}
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    with running_router(args) as router:
        answers = {
            name: router.client.post("/v1/chat/completions", json={"model": name, **body}).json()
            for name in ("alpha", "beta")
        }
        shown = {
            name: router.client.post("/api/show", json={"model": name}).json()["capabilities"]
            for name in ("alpha", "beta")
        }
    assert "tool_calls" not in answers["alpha"]["choices"][0]["message"]
    (call,) = answers["beta"]["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "clock"
    assert shown == {"alpha": ["completion"], "beta": ["completion", "tools"]}
