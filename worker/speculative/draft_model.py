"""The draft model of ``--spec-type draft-simple``: a small model that guesses ahead.

It has its own context with one sequence per slot. Each sequence mirrors what the target's
slot holds (its prompt and accepted tokens): before drafting, a sequence drops what the target
rejected and reads what it has not seen yet, so a chat's next turn or a rejected guess costs
only the difference. Guesses are greedy, as llama-server's (the top candidate among ten; with
``--spec-draft-p-min``, only while its probability among them is at least that), and every
drafting sequence advances in the same ``llama_decode``. Engine thread only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import structlog
from llama_cpp._utils import suppress_stdout_stderr

from worker.devices.params import DeviceParams
from worker.devices.settings import GpuSettings
from worker.engine.llama_model import LlamaModel
from worker.engine.token_prefix import common_prefix
from worker.host.llama_bindings import llama_cpp
from worker.speculative.vocab_check import vocab_mismatch

__all__ = ["DraftModel", "DraftRequest"]

_log = structlog.get_logger("corral.worker.speculative")
_TOP_K = 10  # candidates p-min is measured among, as llama-server's draft sampler


class DraftRequest(NamedTuple):
    seq: int  # the slot
    history: list[int]  # what the target's slot holds
    last: int  # sampled by the target, not decoded yet: the draft continues after it
    limit: int  # at most this many tokens


class DraftModel:
    def __init__(
        self,
        path: Path,
        *,
        target_vocab: Any,
        n_ctx: int,
        n_seq: int,
        n_batch: int,
        n_gpu_layers: int,
        threads: int,
        gpu: GpuSettings,
    ) -> None:
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = n_gpu_layers
        context = llama_cpp.llama_context_default_params()
        self._device_params = DeviceParams(gpu)  # kept: the parameters point into it
        self._device_params.apply(params, context)
        self._model = LlamaModel(str(path), params)
        reason = vocab_mismatch(target_vocab, self._model.vocab)
        if reason is not None:
            self._model.close()
            raise ValueError(
                f"draft model {path.name} cannot draft for this model: {reason} "
                "(llama-server: the target and draft vocabs are not compatible)"
            )
        self._target_vocab_size = llama_cpp.llama_vocab_n_tokens(target_vocab)
        self._n_vocab = self._model.n_vocab()
        context.n_ctx = n_ctx
        context.n_batch = context.n_ubatch = n_batch
        context.n_seq_max = n_seq
        context.kv_unified = False  # as the target: each slot its share of the context
        context.n_threads = context.n_threads_batch = threads
        with suppress_stdout_stderr(disable=False):
            self._ctx = llama_cpp.llama_init_from_model(self._model.model, context)
        if self._ctx is None:
            self._model.close()
            raise ValueError("failed to create the draft model's context (out of memory?)")
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._n_batch = n_batch
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.n_ctx_seq = int(llama_cpp.llama_n_ctx_seq(self._ctx))
        self._cached: list[list[int]] = [[] for _ in range(n_seq)]  # each sequence's KV
        self._pending: list[tuple[int, int]] = []  # (sequence, token) added since the last decode

    def close(self) -> None:
        llama_cpp.llama_batch_free(self._batch)
        llama_cpp.llama_free(self._ctx)
        self._model.close()

    def draft(
        self, requests: Sequence[DraftRequest], *, n_max: int, p_min: float
    ) -> dict[int, list[int]]:
        """Each request's guesses by slot (an empty list where the model was not confident)."""
        # Room for the last token and the guesses in the draft's own context too.
        wanted = [
            r._replace(limit=min(r.limit, n_max, self.n_ctx_seq - len(r.history) - 2))
            for r in requests
        ]
        wanted = [r for r in wanted if r.limit > 0]
        drafts: dict[int, list[int]] = {r.seq: [] for r in requests}
        if not wanted or not self._catch_up(wanted):
            return drafts
        # Each drafting sequence: (request, batch index of its logits).
        drafting = [(r, self._add(r.seq, r.last, len(r.history), logits=True)) for r in wanted]
        while drafting and self._decode():
            still: list[tuple[DraftRequest, int]] = []
            for request, index in drafting:
                token = self._guess(index, p_min)
                if token is None:
                    continue
                guesses = drafts[request.seq]
                guesses.append(token)
                if len(guesses) < request.limit:
                    position = len(request.history) + len(guesses)
                    still.append((request, self._add(request.seq, token, position, logits=True)))
            drafting = still
        return drafts

    def _catch_up(self, requests: Sequence[DraftRequest]) -> bool:
        """Make each sequence hold its slot's history; False if the draft model failed."""
        self._clear()
        for request in requests:
            cached = self._cached[request.seq]
            keep = common_prefix(cached, request.history)
            if keep < len(cached) and not llama_cpp.llama_memory_seq_rm(
                self._memory, request.seq, keep, -1
            ):
                llama_cpp.llama_memory_seq_rm(self._memory, request.seq, -1, -1)
                keep = 0
            del cached[keep:]
            for position in range(keep, len(request.history)):
                if self._batch.n_tokens == self._n_batch and not self._decode():
                    return False
                self._add(request.seq, request.history[position], position, logits=False)
        return self._decode() if self._batch.n_tokens else True

    def _clear(self) -> None:
        self._batch.n_tokens = 0
        self._pending = []

    def _add(self, seq: int, token: int, position: int, *, logits: bool) -> int:
        batch = self._batch
        index: int = batch.n_tokens
        batch.token[index] = token
        batch.pos[index] = position
        batch.n_seq_id[index] = 1
        batch.seq_id[index][0] = seq
        batch.logits[index] = logits
        batch.n_tokens = index + 1
        self._pending.append((seq, token))
        return index

    def _decode(self) -> bool:
        code = llama_cpp.llama_decode(self._ctx, self._batch)
        if code != 0:
            # Drafting is only a shortcut: the target goes on without guesses. The sequences
            # are reset, since what this batch left in them is unknown.
            _log.warning("draft model decode failed", code=code)
            for seq, _ in self._pending:
                llama_cpp.llama_memory_seq_rm(self._memory, seq, -1, -1)
                self._cached[seq] = []
            self._clear()
            return False
        for seq, token in self._pending:
            self._cached[seq].append(token)
        self._clear()
        return True

    def _guess(self, index: int, p_min: float) -> int | None:
        # lazily: numpy is 16 MiB of a worker's memory, needed only with a draft model
        # (docs/benchmarks.md, Swaps); after the first time it is a lookup in sys.modules.
        import numpy as np

        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(self._ctx, index), shape=(self._n_vocab,)
        )
        token = int(logits.argmax())
        if token >= self._target_vocab_size:  # the draft's extra tokens mean nothing to the target
            return None
        if p_min > 0.0:
            top = np.partition(logits, -_TOP_K)[-_TOP_K:]
            if 1.0 / float(np.exp(top - logits[token]).sum()) < p_min:
                return None
        return token
