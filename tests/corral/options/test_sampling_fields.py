"""The table of sampling fields is the one place their names are written, and the types that
hold the fields as attributes agree with it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from corral.options.model_options import ModelOptions
from corral.options.sampling_fields import SAMPLING_FIELDS, SamplingField, sampling_option_rows
from corral.options.table import OPTIONS
from router.api.ollama.protocol import Options
from worker.answer.sampling_fields import SamplingFields
from worker.sampling.params import DEFAULT_SAMPLERS, SAMPLER_CHARS, SamplingParams

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("corral", "router", "worker", "downloads", "webui")
TABLE = Path("corral/options/sampling_fields.py")
# The chain's own vocabulary: upstream's sampler names (common/sampling.cpp), some of which are
# spelled as the fields they read ("top_k" the sampler, "top_k" the field). The modules that
# build the chain write them.
SAMPLERS = frozenset(SAMPLER_CHARS.values()) | frozenset(DEFAULT_SAMPLERS)
SAMPLER_MODULES = {Path("worker/sampling/params.py"), Path("worker/sampling/chain.py")}
# SamplingParams' settings that are no field of a request's: made from other fields (grammars,
# text biases) or from the worker's options (the reasoning budget).
DERIVED = {"text_bias", "grammar", "grammar_triggers", "reasoning_budget"}
# Ollama's options that are no sampling field: the budget and stop strings.
OLLAMA_OTHERS = {"num_predict", "num_keep", "stop"}


def _names(row: SamplingField) -> set[str]:
    """Every name of a field a module could write: request, options and their long spellings,
    the model file's key (whole and after its prefix), Ollama's name."""
    names = {row.request, row.ollama or row.request}
    for option in row.options:
        spellings = option.spellings
        names |= {option.name, *(s for s in spellings if len(s) > 2 and s.islower())}
    if row.gguf:
        names |= {row.gguf, row.gguf.rpartition(".")[2]}
    return names


def _written(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def test_no_product_module_but_the_table_writes_a_sampling_fields_name() -> None:
    names = set().union(*(_names(row) for row in SAMPLING_FIELDS))
    found = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = path.relative_to(ROOT)
            if module == TABLE:
                continue
            written = _written(path) & names
            if module in SAMPLER_MODULES:
                written -= SAMPLERS
            if written:
                found[str(module)] = sorted(written)
    assert found == {}, "use the field's row in corral/options/sampling_fields.py (TOP_K.option, …)"


def test_the_scan_finds_a_name_written_by_hand(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text('DEFAULTS = {"top-k": "40"}\n')
    top_k = next(row for row in SAMPLING_FIELDS if row.option == "top-k")
    assert {"top_k", "top-k", "general.sampling.top_k"} <= _names(top_k)
    assert "top-k" in _written(module) & _names(top_k)


def test_every_field_is_a_request_field_and_a_sampling_setting() -> None:
    requests = [row.request for row in SAMPLING_FIELDS]
    assert len(set(requests)) == len(requests)
    assert set(requests) <= set(SamplingFields.__struct_fields__)
    settings = {field.name for field in dataclasses.fields(SamplingParams)}
    assert settings - DERIVED == set(requests)


@pytest.mark.parametrize(
    "row",
    [row for row in SAMPLING_FIELDS if row.options and row.kind != "other"],
    ids=lambda row: row.request,
)
def test_a_settings_default_is_its_options_default(row: SamplingField) -> None:
    default = getattr(SamplingParams(), row.request)
    readers = {"float": ModelOptions().real, "int": ModelOptions().integer}
    expected = readers.get(row.kind, ModelOptions().flag)(row.option)
    assert default == expected
    assert type(default) is type(expected)


def test_ollamas_options_are_the_tables_and_its_budget() -> None:
    ollama = {row.ollama for row in SAMPLING_FIELDS if row.ollama}
    assert set(Options.__struct_fields__) == ollama | OLLAMA_OTHERS
    assert all(row.ollama for row in SAMPLING_FIELDS if row.modelfile)


def test_every_option_is_in_the_option_table_with_its_help() -> None:
    options = {spec.name: spec for spec in OPTIONS}
    for spec in sampling_option_rows():
        assert options[spec.name] is spec
        assert spec.help


def test_the_stages_are_the_chains_samplers() -> None:
    # mirostat replaces the chain, dist draws the token, logit_bias goes first (chain.py).
    stages = {stage for row in SAMPLING_FIELDS for stage in row.stages}
    assert stages <= SAMPLERS | {"adaptive_p", "mirostat", "dist", "logit_bias"}
    assert SAMPLERS - {"infill"} <= stages


def test_a_number_a_request_checks_is_int_or_float_and_limited_within_its_range() -> None:
    for row in SAMPLING_FIELDS:
        if row.limit is not None:
            assert row.kind in ("int", "float"), row.request
            assert row.limit.low <= row.limit.high, row.request
