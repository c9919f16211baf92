"""Each kind of option value is one object: every kind the rows may name has one."""

from __future__ import annotations

from typing import get_args

import pytest

from corral.options.kinds import KINDS, normalise_value, typed_value
from corral.options.table import OPTIONS, option_spec
from corral.options.values import OptionKind


def test_every_kind_has_its_object() -> None:
    assert set(KINDS) == set(get_args(OptionKind))
    assert {spec.kind for spec in OPTIONS} <= set(KINDS)


@pytest.mark.parametrize(
    ("name", "raw", "typed"),
    [
        ("batch-size", "1024", 1024),
        ("kv-cache-max", "1G", 1 << 30),
        ("mmap", "off", False),
        ("fit", "on", True),
        ("flash-attn", "-1", "auto"),
        ("lora", "a.gguf, b.gguf", ("a.gguf", "b.gguf")),
        ("lora-scaled", "a.gguf:0.5", (("a.gguf", 0.5),)),
        ("reverse-prompt", "a,b", ("a,b",)),
        ("tensor-split", "3/1", (3.0, 1.0)),
        ("control-vector-layer-range", "2 5", (2, 5)),
    ],
)
def test_a_value_is_held_as_its_kind_says(name: str, raw: str, typed: object) -> None:
    spec = option_spec(name)
    assert typed_value(spec, normalise_value(spec, raw, negated=False)) == typed


def test_a_repeated_flag_is_one_flag_per_value_where_each_stays_whole() -> None:
    assert KINDS["strings"].worker_args("-r", '["a,b", "c"]') == ["-r", "a,b", "-r", "c"]
    assert KINDS["pair"].worker_args("--range", "1,3") == ["--range", "1", "3"]
    assert KINDS["list"].worker_args("--lora", "a,b") == ["--lora", "a,b"]
