"""The bounds of a GGUF header walk (corral.hub.gguf_cursor), through the header readers: what a
crafted header is refused for, and what is skipped without being read."""

from __future__ import annotations

import os
import struct
import tracemalloc
from pathlib import Path

import pytest

from corral.hub.gguf_cursor import MAX_DEPTH, MAX_ITEMS, MAX_NAME, MAX_TEXT, MAX_TEXT_TOTAL
from corral.hub.gguf_header import GGUFError, read_gguf_metadata, read_gguf_tensors
from tests.support.files.gguf_mutations import nested_arrays, string_value

_U32 = struct.Struct("<I")


def _key(name: bytes, value: bytes) -> bytes:
    return struct.pack("<Q", len(name)) + name + value


def _u32(number: int) -> bytes:
    return _U32.pack(4) + _U32.pack(number)


def _gguf(path: Path, *keys: bytes, tensors: bytes = b"", n_tensors: int = 0) -> Path:
    """A header of these keys (an empty one: a key the caller appends) and tensor infos."""
    path.write_bytes(b"GGUF" + _U32.pack(3) + struct.pack("<QQ", n_tensors, len(keys)))
    with path.open("ab") as file:
        file.write(b"".join(keys) + tensors)
    return path


def test_arrays_nested_up_to_the_limit_are_skipped(tmp_path: Path) -> None:
    path = _gguf(tmp_path / "m.gguf", _key(b"a", nested_arrays(MAX_DEPTH)), _key(b"b", _u32(7)))
    assert read_gguf_metadata(path) == {"b": 7}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 3000, 100_000])
def test_deeper_arrays_are_refused_without_recursion(tmp_path: Path, depth: int) -> None:
    path = _gguf(tmp_path / "m.gguf", _key(b"a", nested_arrays(depth)))
    for read in (read_gguf_metadata, read_gguf_tensors):
        with pytest.raises(GGUFError, match=f"arrays nested deeper than {MAX_DEPTH}"):
            read(path)


def test_a_long_key_name_is_refused(tmp_path: Path) -> None:
    longest = _key(b"k" * MAX_NAME, _u32(1))
    assert read_gguf_metadata(_gguf(tmp_path / "ok.gguf", longest)) == {"k" * MAX_NAME: 1}
    path = _gguf(tmp_path / "long.gguf", _key(b"k" * (MAX_NAME + 1), _u32(1)))
    with pytest.raises(GGUFError, match=f"a key name of {MAX_NAME + 1} bytes"):
        read_gguf_metadata(path)


def test_a_tensor_name_llama_cpp_would_refuse_is_refused(tmp_path: Path) -> None:
    def tensor(name: bytes) -> bytes:  # one F32 element at offset 0
        return _key(name, _U32.pack(1) + struct.pack("<Q", 1) + _U32.pack(0) + bytes(8))

    ok = _gguf(tmp_path / "ok.gguf", tensors=tensor(b"t" * 63), n_tensors=1)
    assert read_gguf_tensors(ok)[1][0].name == "t" * 63
    long = _gguf(tmp_path / "long.gguf", tensors=tensor(b"t" * 64), n_tensors=1)
    with pytest.raises(GGUFError, match="a tensor name of 64 bytes"):
        read_gguf_tensors(long)


def test_a_shape_of_more_elements_than_int64_is_refused(tmp_path: Path) -> None:
    dims = struct.pack("<QQ", 1 << 32, 1 << 31)
    tensor = _key(b"t", _U32.pack(2) + dims + _U32.pack(0) + bytes(8))
    path = _gguf(tmp_path / "m.gguf", tensors=tensor, n_tensors=1)
    with pytest.raises(GGUFError, match=r"tensor 't' has a shape of \[4294967296, 2147483648\]"):
        read_gguf_tensors(path)


def test_string_values_over_the_cap_are_skipped_not_read(tmp_path: Path) -> None:
    path = _gguf(
        tmp_path / "m.gguf",
        _key(b"fits", string_value(b"x" * MAX_TEXT)),
        _key(b"long", string_value(b"x" * (MAX_TEXT + 1))),
        _key(b"after", _u32(3)),
    )
    metadata = read_gguf_metadata(path)
    assert set(metadata) == {"fits", "after"}
    assert len(str(metadata["fits"])) == MAX_TEXT


def test_string_values_beyond_the_headers_total_are_skipped(tmp_path: Path) -> None:
    size = 900_000
    keys = [_key(f"s{n}".encode(), string_value(b"x" * size)) for n in range(6)]
    metadata = read_gguf_metadata(_gguf(tmp_path / "m.gguf", *keys, _key(b"after", _u32(3))))
    kept = MAX_TEXT_TOTAL // size
    assert set(metadata) == {f"s{n}" for n in range(kept)} | {"after"}


def test_a_huge_string_is_never_in_memory(tmp_path: Path) -> None:
    """A 1 GiB value (a hole: no disk used) costs the reader no more than a small one."""
    huge = 1 << 30
    path = _gguf(tmp_path / "m.gguf", _key(b"huge", struct.pack("<IQ", 8, huge)), b"")
    with path.open("r+b") as file:  # the second key, after the string
        file.seek(huge, os.SEEK_END)
        file.write(_key(b"after", _u32(3)))
    tracemalloc.start()
    try:
        assert read_gguf_metadata(path) == {"after": 3}
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_more_elements_than_the_walk_allows_are_refused_before_walking(tmp_path: Path) -> None:
    """A count that claims more strings than the walk's budget: refused at once, without
    reading one of them (the file holds none)."""
    claim = struct.pack("<IIQ", 9, 8, MAX_ITEMS + 1)
    path = _gguf(tmp_path / "m.gguf", _key(b"vocab", claim))
    with pytest.raises(GGUFError, match=f"more than {MAX_ITEMS} array elements to walk"):
        read_gguf_metadata(path)
    huge = _gguf(tmp_path / "huge.gguf", _key(b"a", struct.pack("<IIQ", 9, 0, 1 << 40)))
    with pytest.raises(GGUFError, match="1099511627776 array elements"):
        read_gguf_metadata(huge)


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "m.gguf"
    os.mkfifo(fifo)
    with pytest.raises(GGUFError, match="not a regular file"):
        read_gguf_metadata(fifo)
