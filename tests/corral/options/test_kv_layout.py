"""One KV layout for both processes: the context the worker creates is the one the router's
memory estimate counts (corral/options/kv_layout.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.options.kv_layout import KvLayout, kv_layout
from corral.options.model_options import ModelOptions
from corral.options.table import normalise_options
from worker.engine.model import LoadedModel
from worker.host.llama_bindings import llama_cpp
from worker.settings.parse import parse_worker_args

# (the options as a preset gives them to the router, the flags the router renders from them)
CASES = [
    (),
    (("ctx-size", "512"),),
    (("parallel", "2"), ("ctx-size", "512")),
    (("parallel", "2"), ("ctx-size", "512"), ("kv-unified", "true")),
    (("parallel", "3"),),
    (("parallel", "-1"), ("kv-unified", "false"), ("cache-type-k", "f32")),
    (("parallel", "2"), ("kv-unified-per-slot", "256")),
    (("kv-unified-per-slot", "256"), ("ctx-size", "2048")),
    (("parallel", "2"), ("ctx-size", "512"), ("courtesy-slot", "true")),
    (("parallel", "2"), ("courtesy-slot", "true")),
    (("courtesy-slot", "true"),),
]


def _router_layout(pairs: tuple[tuple[str, str], ...]) -> KvLayout:
    return kv_layout(ModelOptions(normalise_options(pairs, where="test")))


@pytest.mark.parametrize("pairs", CASES, ids=str)
def test_the_worker_lays_its_cache_out_as_the_router_estimates_it(
    models_dir: Path, pairs: tuple[tuple[str, str], ...]
) -> None:
    router = _router_layout(pairs)
    flags = ModelOptions(dict(pairs)).worker_args()
    settings = parse_worker_args(
        ["--model", str(models_dir / "alpha.gguf"), "--no-kv-persist", *flags]
    )
    assert settings.kv_layout == router
    model = LoadedModel(settings, lambda value: None)
    try:
        n_ctx_train = model.model.n_ctx_train()
        assert llama_cpp.llama_n_ctx(model.ctx) == router.n_ctx(n_ctx_train)
        assert model.batcher.n_ctx_seq == router.n_ctx_seq(n_ctx_train)
        assert len(model.batcher.slots) == router.slots
        assert len(model.batcher.sequences) == router.sequences
    finally:
        model.close()


def test_automatic_slots_are_four_sharing_one_cache_whatever_kv_unified_says() -> None:
    layout = _router_layout((("kv-unified", "false"),))
    assert (layout.slots, layout.unified, layout.streams) == (4, True, 1)
    split = _router_layout((("parallel", "2"), ("ctx-size", "512")))
    assert (split.streams, split.n_ctx(2048), split.n_ctx_seq(2048)) == (2, 512, 256)
    assert _router_layout((("parallel", "2"),)).n_ctx(2048) == 4096  # trained context per stream


def test_kv_unified_per_slot_sizes_the_pool_unless_ctx_size_is_given() -> None:
    sized = _router_layout((("parallel", "3"), ("kv-unified-per-slot", "256")))
    assert (sized.n_ctx(2048), sized.n_ctx_seq(2048)) == (768, 256)
    capped = _router_layout((("kv-unified-per-slot", "256"), ("ctx-size", "4096")))
    assert (capped.n_ctx(2048), capped.n_ctx_seq(2048)) == (4096, 256)  # a cap on each slot


def test_a_courtesy_sequence_costs_a_slots_share_of_split_caches_none_of_one() -> None:
    split = _router_layout((("parallel", "2"), ("ctx-size", "512"), ("courtesy-slot", "true")))
    assert (split.sequences, split.streams) == (3, 3)
    assert (split.n_ctx(2048), split.n_ctx_seq(2048)) == (768, 256)  # each slot keeps 256
    trained = _router_layout((("parallel", "2"), ("courtesy-slot", "true")))
    assert (trained.n_ctx(2048), trained.n_ctx_seq(2048)) == (6144, 2048)
    shared = _router_layout((("courtesy-slot", "true"),))  # automatic: one cache for all
    assert (shared.sequences, shared.n_ctx(2048), shared.n_ctx_seq(2048)) == (5, 2048, 2048)
