"""``/infill`` fills between a prefix and a suffix on models with FIM tokens."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.worker_process import worker


def test_infill_on_a_fim_model(tmp_path: Path) -> None:
    coder = write_tiny_gguf(tmp_path / "coder.gguf", name="coder", fim=True)
    with worker(coder) as child:
        body = {
            "input_prefix": "def hello():\n    ", "input_suffix": "\n    return 1\n",
            "input_extra": [{"filename": "util.py", "text": "x = 1\n"}],
            "n_predict": 5, "ignore_eos": True,
        }  # fmt: skip
        reply = httpx.post(f"{child.url}/infill", json=body, timeout=60).json()
        assert reply["stop"] is True
        assert reply["tokens_predicted"] == 5
        assert reply["content"]
        prefix = httpx.post(f"{child.url}/tokenize", json={"content": body["input_prefix"]}).json()[
            "tokens"
        ]
        # FIM_PRE, the prefix, FIM_SUF, the suffix, FIM_MID and the extra file were all read.
        assert reply["tokens_evaluated"] > len(prefix) + 3


def test_infill_on_a_model_without_fim_is_501(models_dir: Path) -> None:
    with worker(models_dir / "alpha.gguf") as child:
        response = httpx.post(f"{child.url}/infill", json={"input_prefix": "a"})
        assert response.status_code == 501
        error = response.json()["error"]
        assert error["type"] == "not_supported_error"
        assert "Infill is not supported" in error["message"]
