"""Which settings make a saved KV cache another model's (worker.cache.kv_key)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from worker.cache.kv_key import cache_key
from worker.settings.parse import parse_worker_args


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


def test_request_defaults_leave_the_cache_key_alone(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    plain = cache_key(parse_worker_args(["--model", str(model)]))
    defaults = ["--temp", "0.2", "--top-k", "5", "--grammar", "root ::= [a-z]+", "-r", "END"]
    dressed = cache_key(parse_worker_args(["--model", str(model), *defaults]))
    assert dressed.digest == plain.digest


def test_the_cache_key_is_the_same_in_every_process(tmp_path: Path) -> None:
    # A set's order follows string hashing, which Python seeds per process: a key built from
    # one must not change when the next worker computes it (the saved cache would be lost).
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    args = ["--model", str(model), "--ctx-size", "64", "-np", "2", "--cache-type-k", "f16"]
    script = (
        "import sys; from worker.cache.kv_key import cache_key; "
        "from worker.settings.parse import parse_worker_args; "
        "print(cache_key(parse_worker_args(sys.argv[1:])).digest.hex())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script, *args],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in range(1, 6)
    }
    assert len(digests) == 1
