"""The option table's defaults and the typed reading of a model's options."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.options.kinds import normalise_value
from corral.options.model_options import ModelOptions
from corral.options.table import OPTIONS, OptionSpec, normalise_options
from worker.sampling.params import SamplingParams


@pytest.mark.parametrize("spec", [s for s in OPTIONS if s.default is not None], ids=str)
def test_every_default_is_a_value_its_option_accepts(spec: OptionSpec) -> None:
    assert spec.default is not None
    assert normalise_value(spec, spec.default, negated=False) == spec.default


def test_an_option_given_beats_its_default_and_one_not_given_is_llama_servers() -> None:
    options = ModelOptions(normalise_options([("temperature", "0.2")], where="test"))
    assert options.real("temp") == 0.2
    assert options.real("top-p") == 0.95  # common/common.h
    assert options.integer("batch-size") == 2048
    assert options.flag("mmap") is True
    assert options.text("pooling") is None  # no default: the model's own


def test_reading_an_option_as_another_type_is_refused() -> None:
    with pytest.raises(TypeError, match="mmap"):
        ModelOptions().integer("mmap")


def test_sampling_defaults_are_the_tables() -> None:
    # temperature 0.8 is written once, in the table; the request defaults read it there.
    assert SamplingParams().temperature == ModelOptions().real("temp") == 0.8
    assert SamplingParams().dry_base == 1.75


def test_a_strings_option_reads_as_whole_strings_commas_kept() -> None:
    # -r given twice, once with a comma: two stop strings, not three.
    given = normalise_options([("reverse-prompt", '["a,b", "c"]')], where="test")
    assert ModelOptions(given).strings("reverse-prompt") == ("a,b", "c")
    assert ModelOptions().strings("reverse-prompt") == ()
    with pytest.raises(TypeError, match="logit-bias"):
        ModelOptions().strings("logit-bias")


def test_an_empty_path_is_no_path_as_llama_cpp_reads_one() -> None:
    # common/arg.cpp keeps -lcs "" as an empty string, which its readers take as unset.
    given = normalise_options([("lookup-cache-static", ""), ("kv-cache-dir", "kv")], where="test")
    options = ModelOptions(given)
    assert "lookup-cache-static" in options  # given, yet no path
    assert options.path("lookup-cache-static") is None
    assert options.path("lookup-cache-dynamic") is None  # not given
    assert options.path("kv-cache-dir") == Path("kv")
    with pytest.raises(TypeError, match="ctx-size"):
        options.path("ctx-size")
