"""Context checkpoints: what a slot's cache cannot give back once it is cut, kept aside.

Most of a slot's KV cache can be cut back to any length, so a prompt that shares a prefix with
the slot's last one reuses that prefix. Two kinds of model keep state that cannot be cut back:
a sliding-window model (gemma-3, gpt-oss; unless ``--swa-full``) keeps only the last window of
positions in its window layers, and a recurrent or hybrid model (Mamba, RWKV, Qwen3-Next) keeps
one state for the whole sequence. For them llama-server (tools/server/server-context.cpp)
checks, before it reuses a prefix, that the memory still holds what the next position needs
(``llama_memory_seq_pos_min``); if not, it restores a checkpoint, a copy of that part of the
state taken near the end of an earlier prompt (``--ctx-checkpoints`` per slot,
``--checkpoint-min-step`` apart), or reads the prompt again from its start. This module does the
same, with the same thresholds (docs/serving.md, "Context checkpoints"). Checkpoints are taken
where llama-server takes them near a prompt's end (4 + ``n_ubatch`` and 4 tokens before it, the
prompt's chunks cut there); llama-server also takes them where a user message starts, which the
engine does not know. Only the engine thread calls into this module.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import structlog

from worker.host.llama_bindings import llama_cpp

__all__ = ["Checkpoint", "Checkpoints"]

_log = structlog.get_logger("corral.worker.checkpoints")
# llama_state_seq_*_ext: only the part of the state that cannot be cut back (include/llama.h).
_PARTIAL_ONLY = llama_cpp.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
# How many tokens before a prompt's end checkpoints are taken, besides n_ubatch (llama-server's
# checkpoint_offsets, https://github.com/ggml-org/llama.cpp/pull/20288).
_END_OFFSET = 4


@dataclass
class Checkpoint:
    pos_min: int
    pos_max: int
    n_tokens: int  # the slot's cached tokens when it was taken
    id_task: int  # the generation that took it
    data: Any  # ctypes buffer with the state


@dataclass
class Checkpoints:
    """The checkpoints of each slot of one context, for a model that needs them."""

    ctx: Any
    n_swa: int  # 0 for a recurrent or hybrid model, or with --swa-full
    limit: int  # --ctx-checkpoints; 0 or less: none are taken (the check still runs)
    min_step: int  # --checkpoint-min-step
    n_batch: int
    n_ubatch: int
    _slots: dict[int, list[Checkpoint]] = field(default_factory=dict)
    # Those of slot caches set aside in the prompt cache, by the tokens each copy holds: a copy
    # of a sliding-window cache holds only the window, so it resumes through them.
    _aside: dict[tuple[int, ...], list[Checkpoint]] = field(default_factory=dict)

    @classmethod
    def for_context(
        cls, ctx: Any, model: Any, swa_full: bool, limit: int, min_step: int
    ) -> Checkpoints | None:
        """Checkpoints for a model whose state cannot all be cut back; None for any other."""
        n_swa = 0 if swa_full else llama_cpp.llama_model_n_swa(model)
        partial = llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(
            model
        )
        if n_swa <= 0 and not partial:
            return None
        n_batch, n_ubatch = llama_cpp.llama_n_batch(ctx), llama_cpp.llama_n_ubatch(ctx)
        return cls(ctx, max(n_swa, 0), limit, min_step, n_batch, n_ubatch)

    @property
    def _memory(self) -> Any:
        return llama_cpp.llama_get_memory(self.ctx)

    def of(self, seq: int) -> list[Checkpoint]:
        return self._slots.setdefault(seq, [])

    def forget(self, seq: int) -> None:
        """The slot's cache now holds another sequence (a saved file loaded, a context shift)."""
        self._slots.pop(seq, None)

    def set_aside(self, seq: int, tokens: list[int], copies: Iterable[list[int]]) -> None:
        """The slot's cache (``tokens``) was copied to the prompt cache, which now holds
        ``copies``: its checkpoints go with the copy (and stay the slot's)."""
        held = {tuple(copy) for copy in copies}
        self._aside = {key: value for key, value in self._aside.items() if key in held}
        if tuple(tokens) in held:
            self._aside[tuple(tokens)] = list(self.of(seq))

    def take_back(self, seq: int, tokens: list[int]) -> None:
        """The prompt cache's copy of ``tokens`` was loaded into the slot, its checkpoints too."""
        self._slots[seq] = self._aside.pop(tuple(tokens), [])

    def resumable(self, seq: int, keep: int) -> int:
        """How many of the ``keep`` cached tokens the slot can resume from (llama-server's test
        before it cuts a slot's cache back): ``keep`` when its memory still holds what position
        ``keep`` needs, else the tokens of the latest checkpoint that does (restored into the
        slot now), else 0. Checkpoints past the result are dropped."""
        if keep > 0:
            pos_min = llama_cpp.llama_memory_seq_pos_min(self._memory, seq)
            threshold = max(0, keep - self.n_swa)
            if pos_min >= threshold:
                keep = self._restore(seq, keep, threshold)
        self._slots[seq] = [c for c in self.of(seq) if c.pos_max <= keep]
        return keep

    def _restore(self, seq: int, keep: int, threshold: int) -> int:
        for checkpoint in reversed(self.of(seq)):
            # One that holds no position past ``keep``, and what ``keep`` needs of the window
            # (server-context.cpp, TAG_CHECKPOINTS_FIX_POS_MIN and TAG_PROMPT_LOGITS).
            usable = checkpoint.pos_max <= keep and (
                checkpoint.pos_min < threshold or checkpoint.pos_min == 0
            )
            if not usable:
                continue
            size = len(checkpoint.data)
            read = llama_cpp.llama_state_seq_set_data_ext(
                self.ctx, checkpoint.data, size, seq, _PARTIAL_ONLY
            )
            if read != size:
                break
            pos_next = min(keep, max(checkpoint.pos_min + 1, checkpoint.pos_max))
            _log.debug("restored a context checkpoint", slot=seq, n_tokens=checkpoint.n_tokens)
            return min(pos_next, checkpoint.n_tokens)
        _log.debug("prompt read again: the cache no longer holds its window", slot=seq)
        return 0

    def chunk(self, n_past: int, n_prompt: int, room: int) -> int:
        """How many prompt tokens from ``n_past`` the next batch may take: a chunk ends where
        a checkpoint is due (4 + n_ubatch and 4 tokens before the prompt's end)."""
        if self.limit <= 0:
            return room
        for offset in (_END_OFFSET + self.n_ubatch, _END_OFFSET):
            end = n_prompt - min(self.n_batch, offset)
            if n_past < end < n_past + room:
                return end - n_past
        return room

    def before_chunk(self, seq: int, n_past: int, n_chunk: int, n_prompt: int, task: int) -> None:
        """A chunk of ``n_chunk`` prompt tokens is about to be decoded after ``n_past``: take a
        checkpoint first when the prompt's end is near, as llama-server does."""
        if self.limit <= 0 or n_prompt >= n_past + n_chunk + self.n_ubatch:
            return
        pos_min = llama_cpp.llama_memory_seq_pos_min(self._memory, seq)
        if pos_min < 0:
            return  # nothing cached yet
        pos_max = llama_cpp.llama_memory_seq_pos_max(self._memory, seq)
        checkpoints = self._make_room(self.of(seq), task)
        size = llama_cpp.llama_state_seq_get_size_ext(self.ctx, seq, _PARTIAL_ONLY)
        data = (ctypes.c_uint8 * size)()
        llama_cpp.llama_state_seq_get_data_ext(self.ctx, data, size, seq, _PARTIAL_ONLY)
        checkpoints[:] = [c for c in checkpoints if c.n_tokens != n_past]  # superseded
        checkpoints.append(Checkpoint(pos_min, pos_max, n_past, task, data))

    def _make_room(self, checkpoints: list[Checkpoint], task: int) -> list[Checkpoint]:
        """llama-server's ``create_checkpoint``: once full, drop other generations' checkpoints
        within ``min_step`` of an earlier one, then the oldest."""
        if len(checkpoints) + 1 >= self.limit:
            kept: list[Checkpoint] = []
            for checkpoint in checkpoints:
                close = kept and checkpoint.n_tokens <= kept[-1].n_tokens + self.min_step
                if checkpoint.id_task != task and close:
                    continue
                kept.append(checkpoint)
            checkpoints[:] = kept
        del checkpoints[: max(0, len(checkpoints) - self.limit + 1)]
        return checkpoints
