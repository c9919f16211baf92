"""``DELETE /models`` of a hub-cache model that other catalogue entries load too.

A preset section on the same file and a model drafting with it resolve to the blob the removal
deletes: each is stopped with the model named, rather than left running on an unlinked file
(docs/security.md, "Local users and processes").
"""

from __future__ import annotations

from pathlib import Path

import psutil

from tests.support.files.hub_cache import lay_out
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import running_router

MODEL = "acme/tiny-GGUF:Q8_0"
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def test_deleting_a_model_stops_every_entry_that_loads_its_files(
    models_dir: Path, tmp_path: Path
) -> None:
    gguf = write_tiny_gguf(tmp_path / "tiny-Q8_0.gguf", name="tiny").read_bytes()
    cache = tmp_path / "hub"
    blob = next((lay_out(cache, {"tiny-Q8_0.gguf": gguf}) / "blobs").iterdir())
    preset = tmp_path / "models.ini"
    preset.write_text(
        f"[chat]\nhf-repo = {MODEL}\n\n"
        f"[drafted]\nmodel = {models_dir / 'alpha.gguf'}\nspec-draft-hf = {MODEL}\n"
    )
    args = ["--models-preset", str(preset), "-c", "256"]
    with running_router(args, env={"HF_HUB_CACHE": str(cache)}) as router:
        for name in (MODEL, "chat", "drafted"):
            reply = router.client.post("/v1/chat/completions", json={"model": name, **CHAT})
            assert reply.status_code == 200, reply.text
        workers = router.worker_pids()
        assert {MODEL, "chat", "drafted"} <= workers.keys()

        removal = router.client.delete("/models", params={"model": MODEL})
        assert removal.json() == {"success": True}
        assert not blob.exists()
        # The reload after it fails ([chat] names a model no longer cached): the entries stay
        # listed, none of them running on the deleted blob.
        models = router.models()
        for name in ("chat", "drafted"):
            assert models[name]["status"]["value"] == "unloaded", models[name]["status"]
            assert not psutil.pid_exists(workers[name])
        router.wait_for_log("stopped the models that load a removed model's files", model=MODEL)
