"""Speculative decoding: which tokens to guess for each generating slot (docs/serving.md).

The batching engine asks once per step; it then decodes each slot's sampled token followed by
the guesses in the same ``llama_decode`` as every other slot, samples each position in turn and
keeps the guesses up to the first one its own sampler disagrees with. So the tokens are those
plain decoding gives: a guess only ever saves the decode that would have produced it.

Types, as llama-server's ``--spec-type`` names them: ``draft-simple`` (a draft model),
``ngram-simple`` (prompt lookup), ``ngram-map-k`` and ``ngram-map-k4v`` (n-gram maps, one per
slot), ``ngram-mod`` (a hashed n-gram table shared by the slots) and ``ngram-cache`` (n-gram
statistics of the history and of lookup cache files).
Several may be listed; the first in llama-server's order of preference (:data:`RUNNABLE_TYPES`)
that has a guess for a slot wins, and only it hears how many of
its guesses were kept. The others llama-server knows, the ``draft-*`` ones besides
``draft-simple``, need model heads llama-cpp-python cannot run: they are refused when the model
loads.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corral.hub.cache_layout import locate_cache_dir
from corral.hub.cache_scan import resolve_cached_model, scan_cache
from worker.devices.settings import GpuSettings
from worker.host.llama_bindings import llama_cpp
from worker.speculative.draft_model import DraftModel, DraftRequest
from worker.speculative.ngram import ngram_draft
from worker.speculative.ngram_cache import N_DRAFT, NgramCache, load_lookup_cache
from worker.speculative.ngram_map import NgramMap
from worker.speculative.ngram_mod import NgramMod
from worker.speculative.settings import SpeculativeSettings
from worker.speculative.synthetic import synthetic_chances

__all__ = ["RUNNABLE_TYPES", "DraftRequest", "Speculator"]

# In llama-server's order of preference (common_speculative_init), whatever order they are
# listed in: the cheap n-gram guesses first, the draft model's when they have none.
RUNNABLE_TYPES = (
    "ngram-simple",
    "ngram-map-k",
    "ngram-map-k4v",
    "ngram-mod",
    "ngram-cache",
    "draft-simple",
)
_MAPS = {"ngram-map-k": True, "ngram-map-k4v": False}  # type → whether it guesses by key only
_SIZE_LIMIT = 1024


def fitted_draft(settings: SpeculativeSettings) -> Path | None:
    """The draft GGUF that ``--fit`` measures with the model, as llama-server fits both (None
    without a draft model)."""
    if not settings.enabled or "draft-simple" not in (settings.types or ("draft-simple",)):
        return None
    return _draft_path(settings)


def _draft_path(settings: SpeculativeSettings) -> Path | None:
    """The draft GGUF: ``--model-draft``, or ``--spec-draft-hf`` looked up in the hub cache
    (with ``--model-draft`` naming the file inside the repository, as llama-server)."""
    if settings.draft_hf is None:
        return settings.model_draft
    cache = locate_cache_dir(os.environ)
    hf_file = settings.model_draft.as_posix() if settings.model_draft is not None else None
    found = resolve_cached_model(scan_cache(cache), settings.draft_hf, hf_file)
    if found is None:
        raise ValueError(f"--spec-draft-hf {settings.draft_hf}: not in the hub cache ({cache})")
    return found.path


def _lookup_cache(path: Path | None) -> dict[tuple[int, int, int, int], dict[int, int]]:
    return load_lookup_cache(path) if path is not None else {}


def _rates(text: str | None) -> list[float]:
    try:
        return [float(rate) for rate in text.split(",")] if text else []
    except ValueError:
        raise ValueError(f"--spec-synth-rates: expected numbers, got '{text}'") from None


class Speculator:
    def __init__(
        self,
        settings: SpeculativeSettings,
        draft_model: DraftModel | None,
        *,
        vocab: Any,
        n_seq: int,
        synthetic: tuple[float, ...] = (),
        lookup: NgramCache | None = None,
    ) -> None:
        self._settings = settings
        listed = settings.types or ("draft-simple",)
        self._types = tuple(kind for kind in RUNNABLE_TYPES if kind in listed)
        self._draft_model = draft_model
        self._vocab = vocab
        self._synthetic = synthetic
        self._rngs = [random.Random() for _ in range(n_seq)]
        self._mod = (
            NgramMod(settings.mod_n_match, settings.mod_n_max, settings.mod_n_min, n_seq)
            if "ngram-mod" in self._types
            else None
        )
        self._maps = {
            kind: [
                NgramMap(size_n, size_m, key_only=key_only, min_hits=min_hits) for _ in range(n_seq)
            ]
            for kind, key_only in _MAPS.items()
            if kind in self._types
            for size_n, size_m, min_hits in [settings.map_k if key_only else settings.map_k4v]
        }
        self._lookup = lookup
        self._drafted_by: list[str | None] = [None] * n_seq  # the type of each slot's last draft

    @classmethod
    def load(
        cls,
        settings: SpeculativeSettings,
        *,
        target_vocab: Any,
        n_ctx: int,
        n_seq: int,
        n_batch: int,
        threads: int,
        gpu: GpuSettings,
    ) -> Speculator | None:
        """The speculator the settings ask for (None: plain decoding); ``ValueError`` says
        why the settings cannot run (the load fails with it)."""
        if not settings.enabled:
            return None
        types = settings.types or ("draft-simple",)
        refused = [kind for kind in types if kind not in RUNNABLE_TYPES]
        if refused:
            raise ValueError(
                f"--spec-type {refused[0]} is not supported here: Corral runs "
                f"{', '.join(RUNNABLE_TYPES)} (llama-cpp-python cannot run the model heads "
                "the other draft-* types need)"
            )
        if settings.n_min > settings.n_max:
            raise ValueError(
                f"--spec-draft-n-min ({settings.n_min}) is above --spec-draft-n-max "
                f"({settings.n_max})"
            )
        for name, value in (
            ("n-match", settings.mod_n_match),
            ("n-max", settings.mod_n_max),
            ("n-min", settings.mod_n_min),
        ):
            if value > _SIZE_LIMIT:  # llama-server's bound
                raise ValueError(f"--spec-ngram-mod-{name} must be at most {_SIZE_LIMIT}")
        for kind, (size_n, size_m, _) in (("k", settings.map_k), ("k4v", settings.map_k4v)):
            for name, value in (("size-n", size_n), ("size-m", size_m)):
                if value > _SIZE_LIMIT:
                    raise ValueError(
                        f"--spec-ngram-map-{kind}-{name} must be at most {_SIZE_LIMIT}"
                    )
        if settings.p_min > 1.0:
            raise ValueError(f"--spec-draft-p-min must be at most 1, got {settings.p_min}")
        longest = max(
            settings.n_max if "draft-simple" in types else 0,
            settings.ngram_size_m if "ngram-simple" in types else 0,
            settings.mod_n_max if "ngram-mod" in types else 0,
            settings.map_k[1] if "ngram-map-k" in types else 0,
            settings.map_k4v[1] if "ngram-map-k4v" in types else 0,
            N_DRAFT if "ngram-cache" in types else 0,
        )
        synthetic = synthetic_chances(settings.synth_len, _rates(settings.synth_rates), longest)
        draft_model = None
        if "draft-simple" in types:
            path = _draft_path(settings)
            if path is None:
                raise ValueError(
                    "--spec-type draft-simple needs a draft model: --model-draft FILE or "
                    "--spec-draft-hf ORG/REPO[:TAG]"
                )
            draft_model = DraftModel(
                path,
                target_vocab=target_vocab,
                n_ctx=settings.ctx_size_draft or n_ctx,
                n_seq=n_seq,
                n_batch=n_batch,
                n_gpu_layers=settings.n_gpu_layers_draft,
                threads=settings.threads_draft or threads,
                gpu=gpu.for_draft(),
            )
        lookup = (
            NgramCache(
                n_seq,
                static=_lookup_cache(settings.lookup_cache_static),
                dynamic=_lookup_cache(settings.lookup_cache_dynamic),
            )
            if "ngram-cache" in types
            else None
        )
        return cls(
            settings,
            draft_model,
            vocab=target_vocab,
            n_seq=n_seq,
            synthetic=synthetic,
            lookup=lookup,
        )

    def close(self) -> None:
        if self._draft_model is not None:
            self._draft_model.close()

    def begin(self, seq: int, seed: int, prompt: Sequence[int]) -> None:
        """A new request in slot ``seq``: synthetic acceptance draws from its seed, as upstream,
        and ``ngram-mod`` learns its prompt."""
        self._rngs[seq].seed(seed if seed >= 0 else None)
        self._drafted_by[seq] = None
        if self._mod is not None:
            self._mod.begin(seq, prompt)
        for maps in self._maps.values():
            maps[seq].begin(prompt)

    def accepted(self, seq: int, count: int) -> None:
        """``count`` of slot ``seq``'s guesses were kept, told to the type that guessed them."""
        kind = self._drafted_by[seq]
        if kind == "ngram-mod" and self._mod is not None:
            self._mod.accepted(seq, count)
        elif kind in self._maps:
            self._maps[kind][seq].accepted(count)

    def keeps(self, seq: int, position: int, guess: int, sampled: int) -> bool:
        """Whether the guess at ``position`` stands, the model having sampled ``sampled`` there:
        when they agree, or, with synthetic acceptance, at its chance (never an end token)."""
        if not self._synthetic:
            return guess == sampled
        chance = self._synthetic[position] if position < len(self._synthetic) else 0.0
        keep = self._rngs[seq].random() < chance
        return keep and not llama_cpp.llama_vocab_is_eog(self._vocab, guess)

    def propose(self, requests: Sequence[DraftRequest]) -> dict[int, list[int]]:
        """Guesses for each slot that asked (possibly none)."""
        settings = self._settings
        drafts: dict[int, list[int]] = {request.seq: [] for request in requests}
        for kind in self._types:
            waiting = [r for r in requests if not drafts[r.seq] and r.limit > 0]
            if not waiting:
                break
            if kind == "ngram-simple":
                for r in waiting:
                    guess = ngram_draft(
                        r.history, r.last, settings.ngram_size_n, settings.ngram_size_m
                    )
                    drafts[r.seq] = guess[: r.limit]
            elif kind in self._maps:
                for r in waiting:
                    drafts[r.seq] = self._maps[kind][r.seq].draft(r.history, r.last)[: r.limit]
            elif kind == "ngram-cache" and self._lookup is not None:
                for r in waiting:
                    drafts[r.seq] = self._lookup.draft(r.seq, r.history, r.last)[: r.limit]
            elif kind == "ngram-mod" and self._mod is not None:
                for r in waiting:
                    drafts[r.seq] = self._mod.draft(r.seq, r.history, r.last)[: r.limit]
            elif self._draft_model is not None:
                found = self._draft_model.draft(waiting, n_max=settings.n_max, p_min=settings.p_min)
                for seq, guess in found.items():
                    drafts[seq] = guess if len(guess) >= settings.n_min else []
            for r in waiting:
                if drafts[r.seq]:
                    self._drafted_by[r.seq] = kind
        return drafts
