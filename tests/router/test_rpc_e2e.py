"""``--rpc`` through the router: the flag and the preset key reach the worker, a model served
over RPC lists its devices in /models, and a dead RPC server fails the load with its reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.remote.rpc_server import closed_port, rpc_server
from tests.support.router_process import running_router

COMPLETION = {"prompt": "once upon a time", "n_predict": 4, "temperature": 0}


def _rpc_arg(entry: dict[str, Any]) -> str:
    args: list[str] = entry["status"]["args"]
    return args[args.index("--rpc") + 1]


def test_the_preset_key_reaches_the_worker(models_dir: Path, tmp_path: Path) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(
        "[*]\nrpc = 10.0.0.1:50052\n\n"
        f"[remote]\nmodel = {models_dir / 'beta.gguf'}\nrpc = 10.0.0.2:50052, 10.0.0.3:50052\n"
    )
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    with running_router(args) as router:
        models = router.models()
        assert _rpc_arg(models["alpha"]) == "10.0.0.1:50052"
        assert _rpc_arg(models["remote"]) == "10.0.0.2:50052,10.0.0.3:50052"


def test_the_flag_reaches_every_worker_and_beats_the_preset(
    models_dir: Path, tmp_path: Path
) -> None:
    preset = tmp_path / "models.ini"
    preset.write_text(f"[remote]\nmodel = {models_dir / 'beta.gguf'}\nrpc = 10.0.0.2:50052\n")
    args = ["--models-dir", str(models_dir), "--models-preset", str(preset)]
    with running_router([*args, "--rpc", "10.0.0.1:50052", "--rpc", "10.0.0.1:50053"]) as router:
        models = router.models()
        assert _rpc_arg(models["alpha"]) == "10.0.0.1:50052,10.0.0.1:50053"
        assert _rpc_arg(models["remote"]) == "10.0.0.1:50052,10.0.0.1:50053"


def test_a_model_on_an_rpc_server_lists_its_devices(models_dir: Path) -> None:
    with rpc_server() as server:
        args = ["-m", str(models_dir / "alpha.gguf"), "-c", "256", "--rpc", str(server.endpoint)]
        with running_router(args) as router:
            response = router.client.post("/completion", json={"model": "alpha", **COMPLETION})
            assert response.status_code == 200, response.text
            devices = router.models()["alpha"]["meta"]["devices"]
    assert [device["layers"] for device in devices] == [0, 3]
    assert devices[1]["name"].endswith(f"[{server.endpoint}]")


def test_an_rpc_server_lost_mid_stream_fails_the_model_with_ggmls_reason(
    models_dir: Path,
) -> None:
    body = {"prompt": "once upon a time", "n_predict": -1, "ignore_eos": True, "stream": True}
    with rpc_server() as server:
        args = ["--models-dir", str(models_dir), "-c", "2048", "--rpc", str(server.endpoint)]
        with running_router(args) as router:
            request = {"model": "alpha", **body}
            with router.client.stream("POST", "/completion", json=request) as stream:
                lines = stream.iter_lines()
                assert next(line for line in lines if line.startswith("data: "))
                server.process.kill()
                rest = [line for line in lines if line.startswith("data: ")]
            error = json.loads(rest[-1].removeprefix("data: "))["error"]
            assert "alpha" in error["message"]
            router.wait_for_log("worker exited", model="alpha")
            status = router.models()["alpha"]["status"]
            assert status["failed"] is True
            # ggml's own message, not a debugger's backtrace (worker/rpc/devices.py).
            assert "Remote RPC server crashed" in status["error"]
            assert router.client.get("/health").status_code == 200


def test_a_dead_rpc_server_fails_the_load_with_the_reason(models_dir: Path) -> None:
    port = closed_port()
    args = ["--models-dir", str(models_dir), "-c", "256", "--rpc", f"127.0.0.1:{port}"]
    with running_router(args) as router:
        response = router.client.post("/completion", json={"model": "alpha", **COMPLETION})
        assert response.status_code == 500
        reason = f"rpc-server 127.0.0.1:{port}: cannot connect: Connection refused"
        assert reason in response.json()["error"]["message"]
        status = router.models()["alpha"]["status"]
        assert status["failed"] is True
        assert reason in status["error"]
        # The router itself goes on serving.
        assert router.client.get("/health").status_code == 200
