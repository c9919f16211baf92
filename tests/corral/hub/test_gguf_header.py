"""Reading a GGUF header's scalar metadata and layout without loading the model."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from corral.hub.gguf_header import (
    _GGML_BLOCKS,
    GGUFError,
    gguf_file_problem,
    read_gguf_layout,
    read_gguf_metadata,
    read_gguf_tensors,
)
from corral.hub.sizes import human_size
from tests.support.files.tiny_gguf import write_tiny_gguf


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
        (b"PK\x03\x04 a zip file", "not a GGUF file: it does not start with 'GGUF'"),
        (b"GGUF\x01\x00\x00\x00", "corrupt header: GGUF version 1"),
        (b"GGUF\x03\x00\x00\x00\x00", "the file ends inside its header"),
        # Text where the first key is: a name of ~10^18 bytes, refused, never read.
        (
            b"GGUF\x03\x00\x00\x00" + bytes(8) + b"\x01" + bytes(7) + b"not really a model",
            "corrupt header: a key name of 7809634769682329454 bytes",
        ),
    ],
)
def test_other_files_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(content)
    with pytest.raises(GGUFError, match=message):
        read_gguf_metadata(path)


def test_the_layout_of_a_whole_file_ends_at_its_size(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_tiny_gguf(path, name="tiny")
    layout = read_gguf_layout(path)
    assert layout.data_end == layout.size == path.stat().st_size
    assert gguf_file_problem(path) is None


def test_a_file_cut_short_says_how_much_of_it_is_there(tmp_path: Path) -> None:
    whole = tmp_path / "tiny.gguf"
    write_tiny_gguf(whole, name="tiny")
    data = whole.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) // 3])
    assert gguf_file_problem(cut) == (
        f"file is truncated: {human_size(len(data) // 3)} of the {human_size(len(data))} "
        "its header describes"
    )
    cut.write_bytes(data[:200])  # inside the key/values
    assert gguf_file_problem(cut) == "file is truncated: it ends inside its header"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "not a GGUF file: it is empty"),
        (b"\x00garbage" * 64, "not a GGUF file: it does not start with 'GGUF'"),
        (b"GGUF" + bytes(range(256)) * 4, "corrupt header: GGUF version 50462976"),
        # Version 3, then a tensor count no file could hold.
        (b"GGUF\x03\x00\x00\x00" + b"\xff" * 16, "corrupt header: 18446744073709551615 tensors"),
    ],
)
def test_a_garbage_header_says_so(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "junk.gguf"
    path.write_bytes(content)
    assert gguf_file_problem(path) == problem


def test_the_tensor_type_table_is_ggmls() -> None:
    assert {int(kind): size for kind, size in gguf.GGML_QUANT_SIZES.items()} == _GGML_BLOCKS


def test_tensor_offsets_point_at_their_data(tmp_path: Path) -> None:
    path = tmp_path / "t.gguf"
    writer = gguf.GGUFWriter(path, "controlvector")
    writer.add_tensor("direction.1", np.arange(4, dtype=np.float32))
    writer.add_tensor("direction.2", np.full(3, 7, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    layout, tensors = read_gguf_tensors(path)
    assert [(t.name, t.kind, t.dims) for t in tensors] == [
        ("direction.1", 0, (4,)),
        ("direction.2", 0, (3,)),
    ]
    data = [np.fromfile(path, np.float32, t.dims[0], offset=t.offset).tolist() for t in tensors]
    assert data == [[0, 1, 2, 3], [7, 7, 7]]
    assert (layout.data_end, layout.parameters) == (tensors[-1].offset + 3 * 4, 7)
