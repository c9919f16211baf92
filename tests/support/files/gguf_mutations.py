"""Malformed GGUF files for security tests: crafted attacks and a seeded fuzzer.

:func:`header_fields` maps where each field of a (valid) header lies, so that a mutation hits a
length, a count or a type rather than random bytes only. :func:`mutated` derives case number
``index`` of a run from ``seed`` alone: any failing case is reproduced by its two numbers.
Families: string and name lengths, counts, value and element types, nested arrays, scalar
values (0 heads, NaN, huge contexts), strings around the reader's caps, truncation, bit flips.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FAMILIES",
    "Field",
    "header_fields",
    "mutated",
    "nested_arrays",
    "string_value",
    "with_key",
    "write_with_huge_string",
]

_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q"}
_FORMATS |= {11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_ALIGNMENT = 32  # the files here use GGUF's default


@dataclass(frozen=True, slots=True)
class Field:
    offset: int
    size: int  # 4 (u32) or 8 (u64) for lengths, counts and types; a scalar's own size
    role: str  # "count", "length", "type", "value"
    kind: int = -1  # a value's GGUF type


def header_fields(data: bytes) -> list[Field]:
    """Every length, count, type and scalar value of a valid header, in file order."""
    fields = [Field(8, 8, "count"), Field(16, 8, "count")]
    n_tensors, n_keys = struct.unpack_from("<QQ", data, 8)
    pos = 24

    def string(pos: int) -> int:
        fields.append(Field(pos, 8, "length"))
        return pos + 8 + int(struct.unpack_from("<Q", data, pos)[0])

    for _ in range(n_keys):
        pos = string(pos)
        kind = struct.unpack_from("<I", data, pos)[0]
        fields.append(Field(pos, 4, "type"))
        pos += 4
        if kind == _ARRAY:
            inner, count = struct.unpack_from("<IQ", data, pos)
            fields += [Field(pos, 4, "type"), Field(pos + 4, 8, "count")]
            pos += 12
            if inner == _STRING:
                for _ in range(count):
                    pos = string(pos)
            else:
                pos += count * _FIXED[inner]
        elif kind == _STRING:
            pos = string(pos)
        else:
            fields.append(Field(pos, _FIXED[kind], "value", kind))
            pos += _FIXED[kind]
    for _ in range(n_tensors):
        pos = string(pos)
        n_dims = struct.unpack_from("<I", data, pos)[0]
        fields.append(Field(pos, 4, "count"))
        pos += 4
        fields += [Field(pos + 8 * i, 8, "count") for i in range(n_dims)]
        pos += 8 * n_dims
        fields += [Field(pos, 4, "type"), Field(pos + 4, 8, "value", 10)]
        pos += 12
    return fields


def string_value(text: bytes) -> bytes:
    """A string key's value: its type, then the string."""
    return struct.pack("<IQ", _STRING, len(text)) + text


def nested_arrays(depth: int, leaf: bytes = struct.pack("<IQ", 0, 0)) -> bytes:
    """An array value ``depth`` arrays deep, each holding the next; ``leaf``: the innermost
    array's element type, count and elements (by default no u8 at all)."""
    return struct.pack("<I", _ARRAY) + struct.pack("<IQ", _ARRAY, 1) * (depth - 1) + leaf


def _key_record(data: bytes, key: str, value_size: int) -> bytes:
    """The key's name and length, padded so that the record keeps the tensor data aligned."""
    name = key.encode()
    name += b"_" * (-(8 + len(name) + value_size) % _ALIGNMENT)
    return struct.pack("<Q", len(name)) + name


def with_key(data: bytes, key: str, value: bytes, copies: int = 1) -> bytes:
    """``data`` with one more key first (``value``: its type and bytes, see
    :func:`string_value`), or ``copies`` keys ``key0``, ``key1``, … of that value; the file
    stays valid when the value is."""
    n_keys = struct.unpack_from("<Q", data, 16)[0]
    names = [key] if copies == 1 else [f"{key}{number}" for number in range(copies)]
    records = [part for name in names for part in (_key_record(data, name, len(value)), value)]
    return b"".join([data[:16], struct.pack("<Q", n_keys + len(names)), *records, data[24:]])


def write_with_huge_string(path: Path, data: bytes, key: str, length: int) -> Path:
    """``data`` with a first key whose string value is ``length`` zero bytes, written as a hole
    (no disk used): a valid model whose header holds a huge string."""
    n_keys = struct.unpack_from("<Q", data, 16)[0]
    value_head = struct.pack("<IQ", _STRING, length)
    record = _key_record(data, key, len(value_head) + length)
    with path.open("wb") as file:
        file.write(data[:16] + struct.pack("<Q", n_keys + 1) + record + value_head)
        file.seek(length, 1)
        file.write(data[24:])
    return path


# --- the fuzzer ----------------------------------------------------------------------------------

# Values of lengths and counts around the limits of the types and of the reader's caps.
_U64_VALUES: tuple[int, ...] = (0, 1, 2, 7, 8, 255, 65535, 2**31 - 1, 2**31, 2**32 - 1, 2**32)
_U64_VALUES += (2**63 - 1, 2**63, 2**64 - 1, (1 << 20) + 1, (1 << 22) + 1, (1 << 30) + 1)
_U32_VALUES = (*range(16), 255, 2**31, 2**32 - 1)


def _put(data: bytearray, field: Field, value: int) -> None:
    fmt = "<Q" if field.size == 8 else "<I"
    struct.pack_into(fmt, data, field.offset, value % (1 << (8 * field.size)))


def _lengths(data: bytearray, fields: list[Field], rng: random.Random) -> str:
    field = rng.choice([f for f in fields if f.role == "length"])
    old = struct.unpack_from("<Q", data, field.offset)[0]
    value = rng.choice((*_U64_VALUES, old - 1, old + 1, old * 2, len(data), rng.getrandbits(64)))
    _put(data, field, value)
    return f"length at {field.offset:#x}: {old} -> {value % 2**64}"


def _counts(data: bytearray, fields: list[Field], rng: random.Random) -> str:
    field = rng.choice([f for f in fields if f.role == "count"])
    fmt = "<Q" if field.size == 8 else "<I"
    old = struct.unpack_from(fmt, data, field.offset)[0]
    pool = _U64_VALUES if field.size == 8 else _U32_VALUES
    value = rng.choice((*pool, old - 1, old + 1, old * 1000, rng.getrandbits(8 * field.size)))
    _put(data, field, value)
    return f"count at {field.offset:#x}: {old} -> {value % 2 ** (8 * field.size)}"


def _types(data: bytearray, fields: list[Field], rng: random.Random) -> str:
    field = rng.choice([f for f in fields if f.role == "type"])
    value = rng.choice((*_U32_VALUES, _ARRAY, _ARRAY, _STRING))
    _put(data, field, value)
    return f"type at {field.offset:#x} -> {value}"


def _values(data: bytearray, fields: list[Field], rng: random.Random) -> str:
    field = rng.choice([f for f in fields if f.role == "value"])
    fmt = _FORMATS[field.kind]
    if fmt in ("<f", "<d"):
        value: float | int = rng.choice((0.0, -1.0, math.nan, math.inf, -math.inf, 1e38))
    elif fmt == "<?":
        value = rng.choice((True, False))
    else:
        bits, signed = 8 * field.size, fmt.islower()
        top = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
        value = rng.choice((0, 1, top, -1 if signed else top // 2, rng.randrange(top + 1)))
    struct.pack_into(fmt, data, field.offset, value)
    return f"{fmt} value at {field.offset:#x} -> {value}"


def _nesting(data: bytearray, fields: list[Field], rng: random.Random) -> str:
    depth = rng.choice((1, 2, 3, 4, 5, 8, 100, 3000))
    leaf = rng.choice(
        (
            struct.pack("<IQ", 0, 0),
            struct.pack("<IQ", _STRING, 2) + struct.pack("<Q", 1) + b"a" + struct.pack("<Q", 0),
            struct.pack("<IQ", 4, 3) + b"\x01" * 12,
            struct.pack("<IQ", _ARRAY, rng.choice((0, 2**40))),
            struct.pack("<IQ", rng.randrange(13, 2**32), 1),
        )
    )
    data[:] = with_key(
        bytes(data), rng.choice(("general.x", "tokenizer.x")), nested_arrays(depth, leaf)
    )
    return f"{depth} nested arrays, leaf {leaf[:12].hex()}"


def _text_caps(data: bytearray, fields: list[Field], rng: random.Random) -> str:
    # Around the cap on one value (1 MiB); the cap on a header's total is a unit test's.
    size, copies = rng.choice((((1 << 20) - 1, 1), ((1 << 20) + 1, 1), (0, 1), (300, 50)))
    data[:] = with_key(bytes(data), "general.text", string_value(b"x" * size), copies)
    return f"{copies} strings of {size} bytes"


def _truncation(data: bytearray, fields: list[Field], rng: random.Random) -> str:
    header_end = fields[-1].offset + fields[-1].size
    end = rng.randrange(header_end + 64) if rng.random() < 0.7 else rng.randrange(len(data))
    del data[end:]
    return f"cut at {end}"


def _bit_flips(data: bytearray, fields: list[Field], rng: random.Random) -> str:
    header_end = fields[-1].offset + fields[-1].size
    flips = [
        rng.randrange(header_end if rng.random() < 0.8 else len(data)) * 8 + rng.randrange(8)
        for _ in range(rng.randint(1, 16))
    ]
    for bit in flips:
        data[bit // 8] ^= 1 << (bit % 8)
    return f"bits flipped: {flips}"


Mutation = Callable[[bytearray, list[Field], random.Random], str]
FAMILIES: dict[str, Mutation] = {
    "lengths": _lengths,
    "counts": _counts,
    "types": _types,
    "values": _values,
    "nesting": _nesting,
    "text_caps": _text_caps,
    "truncation": _truncation,
    "bit_flips": _bit_flips,
}
_IN_PLACE = ["lengths", "counts", "types", "values", "truncation", "bit_flips"]


def mutated(data: bytes, fields: list[Field], seed: int, index: int) -> tuple[str, bytes]:
    """Case ``index`` of the run ``seed``: a description and the mutated file. One to three
    mutations, the first of the family the index picks (so every family has its share)."""
    rng = random.Random(f"{seed}:{index}")
    families = list(FAMILIES)
    first = families[index % len(families)]
    # The others only rewrite bytes in place: megabytes of strings in one case in eight is enough.
    chosen = [first, *rng.sample(_IN_PLACE, rng.choice((0, 0, 1, 2)))]
    out, steps = bytearray(data), []
    for family in chosen:
        try:
            steps.append(f"{family}: {FAMILIES[family](out, fields, rng)}")
        except (IndexError, ValueError, struct.error):  # an earlier step moved the fields
            steps.append(f"{family}: skipped")
    return "; ".join(steps), bytes(out)
