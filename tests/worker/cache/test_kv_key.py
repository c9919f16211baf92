"""Which settings make a saved KV cache another model's (worker.cache.kv_key)."""

from __future__ import annotations

from pathlib import Path

from worker.cache.kv_key import cache_key
from worker.settings import parse_worker_args


def test_names_keys_and_origins_leave_the_cache_key_alone(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    plain = cache_key(parse_worker_args(["--model", str(model)]))
    named = ["--tags", "a,b", "--api-key", "secret", "--cors-origins", "none"]
    dressed = cache_key(parse_worker_args(["--model", str(model), *named]))
    assert dressed.digest == plain.digest
    assert "secret" not in repr(dressed.description)  # a key never reaches what is hashed
    other = cache_key(parse_worker_args(["--model", str(model), "--ctx-size", "64"]))
    assert other.digest != plain.digest
