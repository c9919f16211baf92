"""Split models: a file name's stem, shard number and quant tag, and every shard of a model."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from corral.hub.shards import shard_paths, shards_of, split_gguf_name


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        ("tinygemma3-Q8_0.gguf", ("tinygemma3-Q8_0", 1, "Q8_0")),
        ("model.q4_k_m.gguf", ("model.q4_k_m", 1, "Q4_K_M")),
        ("Llama-UD-Q4_K_XL-00002-of-00003.gguf", ("Llama-UD-Q4_K_XL", 2, "Q4_K_XL")),
        ("m-bf16.gguf", ("m-bf16", 1, "BF16")),
        ("m-IQ4_XS.gguf", ("m-IQ4_XS", 1, "IQ4_XS")),
        ("m-F16.gguf", ("m-F16", 1, "F16")),
        ("m-mxfp4.gguf", ("m-mxfp4", 1, "MXFP4")),
        ("stories260K.gguf", ("stories260K", 1, None)),  # no separator, no tag
        ("gemma-3-1b-it.gguf", ("gemma-3-1b-it", 1, None)),  # a token, but not a quant
    ],
)
def test_split_gguf_name(file_name: str, expected: tuple[str, int, str | None]) -> None:
    assert split_gguf_name(file_name) == expected


def test_every_shard_of_a_split_model() -> None:
    first = PurePosixPath("big/m-Q8_0-00001-of-00003.gguf")
    assert [p.name for p in shards_of(first)] == [
        "m-Q8_0-00001-of-00003.gguf",
        "m-Q8_0-00002-of-00003.gguf",
        "m-Q8_0-00003-of-00003.gguf",
    ]
    assert shards_of(PurePosixPath("m-Q8_0.gguf")) == [PurePosixPath("m-Q8_0.gguf")]


def test_shard_paths_lie_beside_the_first_shard(tmp_path: Path) -> None:
    first = tmp_path / "sub" / "m-Q4_K_M-00001-of-00002.gguf"
    assert shard_paths(first) == [first, tmp_path / "sub" / "m-Q4_K_M-00002-of-00002.gguf"]
    assert shard_paths(tmp_path / "whole-Q8_0.gguf") == [tmp_path / "whole-Q8_0.gguf"]
