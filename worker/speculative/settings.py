"""A worker's speculative-decoding settings, read from its option flags (docs/serving.md).

Parsing never fails here: which types can run, and whether the draft fits the target, is
decided when the model loads (:mod:`worker.speculative.speculator`), so a refusal is a failed
load with its reason, which the router shows for the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SpeculativeSettings", "speculative_settings"]


@dataclass(frozen=True, slots=True)
class SpeculativeSettings:
    types: tuple[str, ...] = ()  # --spec-type, "none" dropped; empty: a draft model if given
    model_draft: Path | None = None
    draft_hf: str | None = None  # org/repo[:TAG] in the hub cache (model_draft: its file)
    n_max: int = 3  # llama-server's defaults (common/common.h)
    n_min: int = 0
    p_min: float = 0.0
    ctx_size_draft: int = 0  # 0: the target's context size
    n_gpu_layers_draft: int = -1  # -1: every layer, as llama-server's "auto" on one device
    threads_draft: int | None = None  # None: the model's
    ngram_size_n: int = 12
    ngram_size_m: int = 48
    mod_n_match: int = 24  # ngram-mod: tokens hashed, most and fewest tokens guessed
    mod_n_max: int = 64
    mod_n_min: int = 48
    # ngram-map-k and ngram-map-k4v: (size_n, size_m, min_hits) each, llama-server's defaults.
    map_k: tuple[int, int, int] = (12, 48, 1)
    map_k4v: tuple[int, int, int] = (12, 48, 1)
    lookup_cache_static: Path | None = None  # ngram-cache: -lcs and -lcd files
    lookup_cache_dynamic: Path | None = None
    synth_len: float | None = None  # synthetic acceptance, for benchmarks (synthetic.py)
    synth_rates: str | None = None  # comma-separated, checked when the model loads

    @property
    def enabled(self) -> bool:
        return bool(self.types) or self.model_draft is not None or self.draft_hf is not None


def _types(options: Mapping[str, str]) -> tuple[str, ...]:
    """--spec-type's types, "none" dropped; --spec-default adds ngram-mod, as llama-server's."""
    types = [t for t in options.get("spec-type", "").split(",") if t and t != "none"]
    if options.get("spec-default") == "true" and "ngram-mod" not in types:
        types.append("ngram-mod")
    return tuple(types)


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _map_settings(
    options: Mapping[str, str], kind: str, defaults: tuple[int, int, int]
) -> tuple[int, int, int]:
    names = (f"spec-ngram-map-{kind}-{name}" for name in ("size-n", "size-m", "min-hits"))
    size_n, size_m, min_hits = (
        int(options[name]) if name in options else default
        for name, default in zip(names, defaults, strict=True)
    )
    return size_n, size_m, min_hits


def speculative_settings(options: Mapping[str, str]) -> SpeculativeSettings:
    """The speculative options among a worker's normalised options."""
    defaults = SpeculativeSettings()

    def integer(name: str, default: int) -> int:
        return int(options[name]) if name in options else default

    layers = options.get("spec-draft-ngl", "auto")
    draft = options.get("model-draft")
    return SpeculativeSettings(
        types=_types(options),
        model_draft=Path(draft) if draft else None,
        draft_hf=options.get("spec-draft-hf"),
        n_max=integer("spec-draft-n-max", defaults.n_max),
        n_min=integer("spec-draft-n-min", defaults.n_min),
        p_min=float(options.get("spec-draft-p-min", defaults.p_min)),
        ctx_size_draft=integer("ctx-size-draft", defaults.ctx_size_draft),
        n_gpu_layers_draft=-1 if layers in ("auto", "all") else int(layers),
        threads_draft=integer("spec-draft-threads", 0) or None,
        ngram_size_n=integer("spec-ngram-simple-size-n", defaults.ngram_size_n),
        ngram_size_m=integer("spec-ngram-simple-size-m", defaults.ngram_size_m),
        mod_n_match=integer("spec-ngram-mod-n-match", defaults.mod_n_match),
        mod_n_max=integer("spec-ngram-mod-n-max", defaults.mod_n_max),
        mod_n_min=integer("spec-ngram-mod-n-min", defaults.mod_n_min),
        map_k=_map_settings(options, "k", defaults.map_k),
        map_k4v=_map_settings(options, "k4v", defaults.map_k4v),
        lookup_cache_static=_path(options.get("lookup-cache-static")),
        lookup_cache_dynamic=_path(options.get("lookup-cache-dynamic")),
        synth_len=float(options["spec-synth-len"]) if "spec-synth-len" in options else None,
        synth_rates=options.get("spec-synth-rates"),
    )
