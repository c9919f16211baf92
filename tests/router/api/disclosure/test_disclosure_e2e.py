"""An inference key is not told where the server keeps its files nor how it runs its workers
(docs/security.md, "Key holders (scopes)"): no worker command line, no preset, no absolute
path in the model list, ``/props``, ``/api/show`` or ``/api/ps``; an admin key sees it all."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.keyed_router import bearer, keyed_router
from tests.support.router_process import RouterProcess

ADMIN, INFERENCE = "paths-admin-key", "paths-inference-key"


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    folder = tmp_path_factory.mktemp("disclosure")
    keys = [f"{ADMIN} admin", f"{INFERENCE} inference"]
    with keyed_router(models_dir, folder, keys, "--ctx-size", "512", admin=ADMIN) as router:
        assert router.client.post("/models/load", json={"model": "alpha"}).is_success
        router.wait_for_log("model loaded", model="alpha")
        yield router


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/models", None),
        ("GET", "/v1/models", None),
        ("GET", "/v1/models/alpha", None),
        ("GET", "/props?model=alpha", None),
        ("POST", "/api/show", {"model": "alpha"}),
        ("GET", "/api/ps", None),
        ("GET", "/api/tags", None),
    ],
)
def test_an_inference_key_sees_no_paths(
    team: RouterProcess, models_dir: Path, method: str, path: str, body: dict[str, str] | None
) -> None:
    answer = team.client.request(method, path, json=body, headers=bearer(INFERENCE))
    assert answer.status_code == 200, answer.text
    folder = str(models_dir.resolve()).replace("/", "\\/")  # as JSON may escape it
    assert str(models_dir.resolve()) not in answer.text
    assert folder not in answer.text


def test_the_model_list_has_no_command_line_for_an_inference_key(
    team: RouterProcess, models_dir: Path
) -> None:
    admin = {e["id"]: e for e in team.client.get("/models").json()["data"]}
    assert str(models_dir.resolve() / "alpha.gguf") in admin["alpha"]["status"]["args"]
    assert "model = " in admin["alpha"]["status"]["preset"]
    listed = team.client.get("/models", headers=bearer(INFERENCE)).json()["data"]
    inference = {e["id"]: e for e in listed}
    for name in ("alpha", "beta"):
        assert "args" not in inference[name]["status"]
        assert "preset" not in inference[name]["status"]
    # What a client needs is all there.
    assert inference["alpha"]["status"]["value"] == "loaded"
    assert inference["alpha"]["meta"]["n_ctx"] == admin["alpha"]["meta"]["n_ctx"]


def test_props_and_show_name_the_file_not_its_path(team: RouterProcess, models_dir: Path) -> None:
    path = str(models_dir.resolve() / "alpha.gguf")
    props = team.client.get("/props?model=alpha", headers=bearer(INFERENCE)).json()
    assert props["model_path"] == "alpha.gguf"
    assert team.client.get("/props?model=alpha").json()["model_path"] == path
    show = team.client.post("/api/show", json={"model": "alpha"}, headers=bearer(INFERENCE)).json()
    assert show["modelfile"].splitlines()[1] == "FROM alpha"
    admin_show = team.client.post("/api/show", json={"model": "alpha"}).json()
    assert admin_show["modelfile"].splitlines()[1] == f"FROM {path}"


def test_slots_show_an_inference_key_no_callers_settings(team: RouterProcess) -> None:
    # One caller's seed and stop words (what it asks, how it samples) are its own.
    body = {"model": "alpha", "prompt": "Once", "n_predict": 2, "seed": 424242}
    asked = team.client.post("/completion", json={**body, "stop": ["PROJECT-NIGHTJAR"]})
    assert asked.status_code == 200, asked.text
    shown = team.client.get("/slots?model=alpha")
    assert "PROJECT-NIGHTJAR" in shown.text  # the admin's view is llama-server's
    hidden = team.client.get("/slots?model=alpha", headers=bearer(INFERENCE))
    assert hidden.status_code == 200, hidden.text
    assert "PROJECT-NIGHTJAR" not in hidden.text
    assert "424242" not in hidden.text
    slots = hidden.json()
    assert [slot["id"] for slot in slots] == [slot["id"] for slot in shown.json()]
    assert all("params" not in slot and "n_ctx" in slot for slot in slots)


def test_a_failed_load_names_the_file_not_its_path(
    models_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A GGUF llama.cpp refuses (an architecture it does not know): its error names the file.
    broken = tmp_path_factory.mktemp("broken-models")
    arch = b"general.architecture" + struct.pack("<IQ", 8, 5)
    data = (models_dir / "alpha.gguf").read_bytes()
    (broken / "broken-arch.gguf").write_bytes(data.replace(arch + b"llama", arch + b"llamx", 1))
    keys = [f"{ADMIN} admin", f"{INFERENCE} inference"]
    chat = {"model": "broken-arch", "messages": [{"role": "user", "content": "hi"}]}
    path = str(broken.resolve() / "broken-arch.gguf")
    with keyed_router(broken, broken, keys, admin=ADMIN) as router:
        for route, body in (("/v1/chat/completions", chat), ("/api/chat", chat)):
            hidden = router.client.post(route, json=body, headers=bearer(INFERENCE))
            assert hidden.status_code >= 400, hidden.text
            assert "broken-arch.gguf" in hidden.text
            assert str(broken.resolve()) not in hidden.text.replace("\\/", "/"), hidden.text
            shown = router.client.post(route, json=body)  # the admin's
            assert path in shown.text.replace("\\/", "/"), shown.text
