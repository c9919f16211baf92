"""Speculative decoding: a draft model or prompt lookup guesses, the target verifies."""

from worker.speculative.settings import SpeculativeSettings, speculative_fields
from worker.speculative.speculator import RUNNABLE_TYPES, DraftRequest, Speculator, fitted_draft

__all__ = [
    "RUNNABLE_TYPES",
    "DraftRequest",
    "SpeculativeSettings",
    "Speculator",
    "fitted_draft",
    "speculative_fields",
]
