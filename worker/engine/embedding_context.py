"""Embeddings (``--embeddings``): a second llama context that returns vectors, not tokens.

It is created on the engine thread the first time it is needed and shares the loaded weights.
Inputs are embedded one at a time as sequence 0, so its KV cache is as small as one input.
With ``rank`` pooling (``--reranking``) the same context scores query/document pairs.
"""

from __future__ import annotations

import math
from typing import Any

from worker.host.llama_bindings import llama_cpp

__all__ = ["POOLING_TYPES", "Embedder"]

POOLING_TYPES = {
    "none": llama_cpp.LLAMA_POOLING_TYPE_NONE,
    "mean": llama_cpp.LLAMA_POOLING_TYPE_MEAN,
    "cls": llama_cpp.LLAMA_POOLING_TYPE_CLS,
    "last": llama_cpp.LLAMA_POOLING_TYPE_LAST,
    "rank": llama_cpp.LLAMA_POOLING_TYPE_RANK,
}


def normalized(vector: list[float], norm: int = 2) -> list[float]:
    """``vector`` scaled as llama.cpp's ``common_embd_normalize``: ``-1`` not at all, ``0`` its
    largest magnitude to 32760 (int16's range), ``1`` taxicab, ``2`` Euclidean, more a p-norm."""
    if norm == -1:
        size = 1.0
    elif norm == 0:
        size = max((abs(x) for x in vector), default=0.0) / 32760.0
    elif norm == 2:
        size = math.sqrt(sum(x * x for x in vector))
    else:
        size = sum(abs(x) ** norm for x in vector) ** (1.0 / norm)
    scale = 1.0 / size if size > 0 else 0.0
    return [x * scale for x in vector]


class Embedder:
    def __init__(self, model: Any, n_ctx: int, n_threads: int, pooling: str | None) -> None:
        params = llama_cpp.llama_context_default_params()
        params.embeddings = True
        params.n_ctx = params.n_batch = params.n_ubatch = n_ctx
        params.n_seq_max = 1
        params.n_threads = params.n_threads_batch = n_threads
        params.pooling_type = POOLING_TYPES.get(
            pooling or "", llama_cpp.LLAMA_POOLING_TYPE_UNSPECIFIED
        )
        self._ctx = llama_cpp.llama_init_from_model(model, params)
        if self._ctx is None:
            raise ValueError("failed to create the embeddings context")
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self.n_ctx = n_ctx
        pooling_type = llama_cpp.llama_pooling_type(self._ctx)
        self.pooled = pooling_type != llama_cpp.LLAMA_POOLING_TYPE_NONE
        self.n_embd = llama_cpp.llama_model_n_embd(model)
        # Rank pooling leaves n_cls_out floats per sequence, not n_embd: reading the model's
        # width there would run past llama.cpp's buffer.
        self.n_pooled = (
            llama_cpp.llama_model_n_cls_out(model)
            if pooling_type == llama_cpp.LLAMA_POOLING_TYPE_RANK
            else self.n_embd
        )
        self._batch = llama_cpp.llama_batch_init(n_ctx, 0, 1)

    def set_threads(self, threads: int, threads_batch: int) -> None:
        """The router's share of the cores (worker/engine/thread_count.py), between decodes."""
        llama_cpp.llama_set_n_threads(self._ctx, threads, threads_batch)

    def close(self) -> None:
        llama_cpp.llama_batch_free(self._batch)
        llama_cpp.llama_free(self._ctx)

    def _decode(self, tokens: list[int]) -> None:
        """Run ``tokens`` alone through the context as sequence 0, every token an output."""
        if not tokens:
            raise ValueError("input is empty")
        if len(tokens) > self.n_ctx:
            # llama-server's words for an input that must fit one batch (clients match "too
            # large"); here the batch is the context, so the context is what to increase.
            raise ValueError(
                f"input ({len(tokens)} tokens) is too large to process. increase the context "
                f"size (current context size: {self.n_ctx})"
            )
        llama_cpp.llama_memory_clear(self._memory, True)
        batch = self._batch
        for i, token in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = True
        batch.n_tokens = len(tokens)
        code = llama_cpp.llama_decode(self._ctx, batch)
        if code != 0:
            raise RuntimeError(f"llama_decode failed with code {code}")

    def _pooled(self) -> Any:
        pointer = llama_cpp.llama_get_embeddings_seq(self._ctx, 0)
        if not pointer:  # a NULL ctypes pointer; indexing it would crash the process
            raise RuntimeError("llama.cpp returned no pooled output")
        return pointer

    def embed(self, tokens: list[int]) -> list[list[float]]:
        """One pooled vector, or one vector per token when the pooling is ``none``."""
        self._decode(tokens)
        if self.pooled:
            return [list(self._pooled()[: self.n_pooled])]
        return [
            list(llama_cpp.llama_get_embeddings_ith(self._ctx, i)[: self.n_embd])
            for i in range(len(tokens))
        ]

    def score(self, tokens: list[int]) -> float:
        """The relevance of one rerank prompt: the first value of its rank-pooled output."""
        if not self.pooled or self.n_pooled < 1:
            raise RuntimeError("this context gives no score: it needs rank pooling")
        self._decode(tokens)
        return float(self._pooled()[0])
