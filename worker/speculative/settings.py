"""A worker's speculative-decoding settings, read from its option flags (docs/serving.md).

Each option row whose ``dest`` is ``speculative.<field>`` fills that field
(worker/settings/parse.py); :func:`speculative_fields` derives the others. The defaults are the
option table's.

Parsing never fails here: which types can run, and whether the draft fits the target, is
decided when the model loads (:mod:`worker.speculative.speculator`), so a refusal is a failed
load with its reason, which the router shows for the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.options.model_options import ModelOptions

__all__ = ["SpeculativeSettings", "speculative_fields"]

_SERVER = ModelOptions()  # llama-server's defaults


def _map_settings(options: ModelOptions, kind: str) -> tuple[int, int, int]:
    """ngram-map-{kind}'s (size_n, size_m, min_hits)."""
    size_n, size_m, min_hits = (
        options.integer(f"spec-ngram-map-{kind}-{name}")
        for name in ("size-n", "size-m", "min-hits")
    )
    return size_n, size_m, min_hits


@dataclass(frozen=True, slots=True)
class SpeculativeSettings:
    types: tuple[str, ...] = ()  # --spec-type, "none" dropped; empty: a draft model if given
    model_draft: Path | None = None
    draft_hf: str | None = None  # org/repo[:TAG] in the hub cache (model_draft: its file)
    n_max: int = _SERVER.integer("spec-draft-n-max")  # llama-server's (the option table's)
    n_min: int = _SERVER.integer("spec-draft-n-min")
    p_min: float = _SERVER.real("spec-draft-p-min")
    ctx_size_draft: int = _SERVER.integer("ctx-size-draft")  # 0: the target's context size
    n_gpu_layers_draft: int = -1  # -1: every layer, as llama-server's "auto" on one device
    threads_draft: int | None = None  # None: the model's
    ngram_size_n: int = _SERVER.integer("spec-ngram-simple-size-n")
    ngram_size_m: int = _SERVER.integer("spec-ngram-simple-size-m")
    # ngram-mod: tokens hashed, most and fewest tokens guessed
    mod_n_match: int = _SERVER.integer("spec-ngram-mod-n-match")
    mod_n_max: int = _SERVER.integer("spec-ngram-mod-n-max")
    mod_n_min: int = _SERVER.integer("spec-ngram-mod-n-min")
    # ngram-map-k and ngram-map-k4v: (size_n, size_m, min_hits) each.
    map_k: tuple[int, int, int] = _map_settings(_SERVER, "k")
    map_k4v: tuple[int, int, int] = _map_settings(_SERVER, "k4v")
    lookup_cache_static: Path | None = None  # ngram-cache: -lcs and -lcd files
    lookup_cache_dynamic: Path | None = None
    synth_len: float | None = None  # synthetic acceptance, for benchmarks (synthetic.py)
    synth_rates: str | None = None  # comma-separated, checked when the model loads

    @property
    def enabled(self) -> bool:
        return bool(self.types) or self.model_draft is not None or self.draft_hf is not None


def _types(options: ModelOptions) -> tuple[str, ...]:
    """--spec-type's types, "none" dropped; --spec-default adds ngram-mod, as llama-server's."""
    types = [t for t in options.items("spec-type") if t != "none"]
    if options.flag("spec-default") and "ngram-mod" not in types:
        types.append("ngram-mod")
    return tuple(types)


def speculative_fields(options: ModelOptions) -> dict[str, Any]:
    """The speculative settings no option row fills by its ``dest`` (``speculative.n_max``):
    the types, the draft's file and layers, the n-gram maps' triples and the lookup caches."""
    layers = options.word("spec-draft-ngl")
    return {
        "types": _types(options),
        "model_draft": options.path("model-draft"),
        "n_gpu_layers_draft": -1 if layers in ("auto", "all") else int(layers),
        "map_k": _map_settings(options, "k"),
        "map_k4v": _map_settings(options, "k4v"),
        "lookup_cache_static": options.path("lookup-cache-static"),
        "lookup_cache_dynamic": options.path("lookup-cache-dynamic"),
    }
