"""A worker's sampling flags become its request defaults, read as llama-server reads them."""

from __future__ import annotations

import pytest

from corral.options.table import normalise_options, render_worker_args
from worker.sampling.params import DEFAULT_SAMPLERS, SamplingParams
from worker.settings.parse import parse_worker_args


def _sampling(*flags: str) -> SamplingParams:
    return parse_worker_args(["-m", "model.gguf", *flags]).sampling


def test_without_flags_the_defaults_are_llama_cpps() -> None:
    assert _sampling() == SamplingParams()
    assert SamplingParams().samplers == DEFAULT_SAMPLERS


def test_each_flag_sets_its_field() -> None:
    sampling = _sampling(
        "--temp", "0.2", "--top-k", "5", "--top-p", "0.5", "--min-p", "0.1", "--typical-p", "0.9",
        "--top-n-sigma", "1.5", "--xtc-probability", "0.3", "--xtc-threshold", "0.2",
        "--repeat-last-n", "16", "--repeat-penalty", "1.3", "--presence-penalty", "0.4",
        "--frequency-penalty", "0.6", "--dry-multiplier", "0.8", "--dry-base", "2",
        "--dry-allowed-length", "3", "--dry-penalty-last-n", "32", "--dynatemp-range", "0.5",
        "--dynatemp-exp", "1.5", "--mirostat", "2", "--mirostat-lr", "0.2", "--mirostat-ent",
        "4", "--adaptive-target", "0.4", "--adaptive-decay", "0.5", "--seed", "7",
        "--ignore-eos",
    )  # fmt: skip
    assert sampling == SamplingParams(
        temperature=0.2, top_k=5, top_p=0.5, min_p=0.1, typical_p=0.9, top_n_sigma=1.5,
        xtc_probability=0.3, xtc_threshold=0.2, repeat_last_n=16, repeat_penalty=1.3,
        presence_penalty=0.4, frequency_penalty=0.6, dry_multiplier=0.8, dry_base=2.0,
        dry_allowed_length=3, dry_penalty_last_n=32, dynatemp_range=0.5, dynatemp_exponent=1.5,
        mirostat=2, mirostat_eta=0.2, mirostat_tau=4.0, adaptive_target=0.4,
        adaptive_decay=0.5, seed=7, ignore_eos=True,
    )  # fmt: skip


def test_a_dry_base_below_one_is_ignored_as_llama_server_ignores_it() -> None:
    assert _sampling("--dry-base", "0.5").dry_base == 1.75


def test_sequence_breakers_replace_the_defaults_and_none_clears_them() -> None:
    two = _sampling("--dry-sequence-breaker", "a", "--dry-sequence-breaker", "b")
    assert two.dry_sequence_breakers == ("a", "b")
    cleared = _sampling("--dry-sequence-breaker", "a", "--dry-sequence-breaker", "none")
    assert cleared.dry_sequence_breakers == ()


def test_samplers_by_name_and_by_letter_with_upstreams_aliases() -> None:
    assert _sampling("--samplers", "Top-K;temp;nucleus;bogus").samplers == (
        "top_k",
        "temperature",
        "top_p",
    )
    assert _sampling("--sampling-seq", "kyt?").samplers == ("top_k", "typ_p", "temperature")


def test_preset_keys_reach_the_worker_as_its_defaults() -> None:
    preset = [("top-k", "5"), ("repeat-penalty", "1.2"), ("samplers", "penalties;top_k;temp")]
    options = normalise_options(preset, where="models.ini: section [story]")
    sampling = _sampling(*render_worker_args(options.items()))
    assert (sampling.top_k, sampling.repeat_penalty) == (5, 1.2)
    assert sampling.samplers == ("penalties", "top_k", "temperature")


def test_logit_bias_flags_are_read_as_llama_server_reads_them() -> None:
    # TOKEN_ID(+/-)BIAS, repeatable; one token's biases add up, as upstream's list applies them.
    sampling = _sampling("-l", "15043+1", "--logit-bias", "7-2.5", "-l", "15043+0.5")
    assert sampling.logit_bias == {15043: 1.5, 7: -2.5}


def test_a_malformed_logit_bias_is_refused_at_startup(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _sampling("-l", "15043*1")
    assert "--logit-bias: expected TOKEN_ID(+/-)BIAS, got '15043*1'" in capsys.readouterr().err
