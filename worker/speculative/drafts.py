"""Each step's guesses: how many tokens each generating sequence may guess (docs/serving.md).

The batching engine asks once per step, before it fills the batch that verifies them.
"""

from __future__ import annotations

from collections.abc import Iterable

from worker.engine.generation import Generation
from worker.speculative.speculator import DraftRequest, Speculator

__all__ = ["propose_drafts"]


def propose_drafts(
    speculator: Speculator,
    sequences: Iterable[tuple[int, list[int], Generation | None]],
    n_batch: int,
    n_ctx_seq: int,
) -> None:
    """Set ``draft`` on each generating sequence of ``sequences`` (its id, the tokens its KV
    cache holds, its generation if any)."""
    generating = {
        seq: (tokens, generation)
        for seq, tokens, generation in sequences
        if generation is not None and generation.next_token is not None and generation.draftable
    }
    # Room in the batch for each sequence's token and guesses, and in its context for the
    # guesses and one more token, so a context shift never lands among a step's guesses;
    # no guess past the token budget (as llama-server).
    share = n_batch // max(len(generating), 1) - 1
    requests: list[DraftRequest] = []
    for seq, (tokens, generation) in generating.items():
        if generation.next_token is None:
            continue  # not generating: excluded above already
        limit = min(share, n_ctx_seq - generation.n_past - 2)
        if generation.max_tokens is not None:
            limit = min(limit, generation.max_tokens - generation.generated - 1)
        requests.append(DraftRequest(seq, tokens, generation.next_token, limit))
    for seq, draft in speculator.propose(requests).items():
        generating[seq][1].draft = draft
