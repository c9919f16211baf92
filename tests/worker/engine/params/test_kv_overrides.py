"""``--override-kv`` replaces GGUF metadata as the model loads, as llama-server's flag does."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.worker_process import worker
from worker.settings.parse import parse_worker_args


def _tokens(model: Path, *flags: str) -> list[int]:
    with worker(model, *flags) as child:
        body = {"content": "hello", "add_special": True}
        return list(httpx.post(f"{child.url}/tokenize", json=body).json()["tokens"])


def test_overridden_metadata_is_what_the_model_runs_with(models_dir: Path) -> None:
    model = models_dir / "alpha.gguf"
    plain = _tokens(model, "--override-kv", "tokenizer.ggml.add_bos_token=bool:true")
    without_bos = _tokens(model, "--override-kv", "tokenizer.ggml.add_bos_token=bool:false")
    assert len(plain) == len(without_bos) + 1
    assert plain[1:] == without_bos


def test_overrides_are_checked_when_the_worker_starts(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["-m", "m.gguf", "--override-kv", "a.b=int:3,c=str:x", "--override-kv", "d=float:0.5"]
    assert parse_worker_args(argv).kv_overrides == (
        ("a.b", "int", "3"),
        ("c", "str", "x"),
        ("d", "float", "0.5"),
    )
    for bad in ("a=int:x", "a=bool:yes", "a:int=3", "a=list:1", f"a=str:{'x' * 128}"):
        with pytest.raises(SystemExit):
            parse_worker_args(["-m", "m.gguf", "--override-kv", bad])
        assert "--override-kv" in capsys.readouterr().err
