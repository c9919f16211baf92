"""Reading a GGUF header's scalar metadata without loading the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.hub.gguf_header import GGUFError, read_gguf_metadata
from tests.support.tiny_gguf import write_tiny_gguf


def test_scalars_are_read_and_arrays_skipped(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_tiny_gguf(path, context_length=2048)
    metadata = read_gguf_metadata(path)
    assert metadata["general.architecture"] == "llama"
    assert metadata["llama.block_count"] == 2
    assert metadata["llama.context_length"] == 2048
    assert isinstance(metadata["tokenizer.chat_template"], str)  # after the skipped vocabulary
    assert "tokenizer.ggml.tokens" not in metadata  # an array


def test_reading_can_stop_before_the_tokenizer(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_tiny_gguf(path)
    metadata = read_gguf_metadata(path, stop_at="tokenizer.")
    assert metadata["llama.embedding_length"] == 64
    assert not any(key.startswith("tokenizer.") for key in metadata)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"PK\x03\x04 a zip file", "is not a GGUF file"),
        (b"GGUF\x01\x00\x00\x00", "GGUF version 1 is not supported"),
        (b"GGUF\x03\x00\x00\x00\x00", "the file ends inside its header"),
    ],
)
def test_other_files_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(content)
    with pytest.raises(GGUFError, match=message):
        read_gguf_metadata(path)
