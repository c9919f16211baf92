"""Slot caches set aside in host memory, as llama-server's prompt cache (``--cache-ram``,
``--cache-idle-slots``; docs/serving.md, "Prompt cache in memory").

With one KV cache shared by the slots (llama-server's automatic slots) every token of every
slot is computed against all the cells in use, an idle slot's old prompt included (masked out,
but read): four slots' leftovers made one stream about 5 % slower. So, as llama-server, once a
generation has started, the idle slots' caches are copied here and cleared from the context;
and a slot about to overwrite what it holds keeps a copy first. A later prompt that shares more
with a copy than with what its slot holds gets the copy back instead of reading it again.

Copies go oldest first once they would pass the cap. One that another copy starts with is
dropped (the longer holds it). Each copy is handed to ``on_keep`` as it is made: the disk tier
(worker/cache/kv_writer.py) writes it, so that the copies in memory are a cache of the files
and one dropped here can still come back from disk. A copy carries the LoRA adapter scales it
was computed under and the cache scope of the request that made it (worker/host/cache_scope.py),
and only serves a prompt decoded with the same scales in the same scope. Only the engine thread
calls into this module.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import structlog

from worker.cache.kv_file import SavedCache
from worker.engine.token_prefix import common_prefix
from worker.host.llama_bindings import llama_cpp

__all__ = ["PromptCache", "SetAside", "seq_state"]

_log = structlog.get_logger("corral.worker.prompt_cache")
# llama-server's rule (server_prompt_cache::load): a copy is not taken when the prompt would
# keep less than a quarter of it; taking it moves it out of the cache, and the rest is lost.
_MIN_KEPT = 0.25


def seq_state(ctx: Any, seq: int, size: int) -> Any:
    """A copy of the ``size`` bytes of state of ``seq`` (a ctypes byte array), or None when
    llama.cpp fails."""
    state = (ctypes.c_uint8 * size)()
    return state if llama_cpp.llama_state_seq_get_data(ctx, state, size, seq) == size else None


@dataclass
class SetAside:
    tokens: list[int]
    state: Any  # ctypes.c_uint8 array: llama_state_seq_get_data's bytes
    scales: tuple[float, ...] = ()  # the LoRA adapter scales it was computed under
    scope: str = ""  # the cache scope whose requests may reuse it

    @property
    def size(self) -> int:
        return len(self.state)

    @property
    def saved(self) -> SavedCache:
        """What the disk tier's file of this copy holds besides its state."""
        return SavedCache(self.tokens, self.scales, self.scope)


def _holds_tokens(longer: list[int], shorter: list[int]) -> bool:
    return common_prefix(longer, shorter) == len(shorter)


def _serves(copy: SetAside, scales: tuple[float, ...], scope: str) -> bool:
    """Whether ``copy`` may serve a prompt decoded under ``scales`` for a request of ``scope``."""
    return copy.scales == scales and copy.scope == scope


class PromptCache:
    """Copies of slot caches of the context ``ctx``, at most ``max_bytes`` (None: no cap)."""

    def __init__(
        self,
        ctx: Any,
        max_bytes: int | None,
        on_keep: Callable[[SetAside], None] | None = None,
    ) -> None:
        self._ctx = ctx
        self._max_bytes = max_bytes
        self._on_keep = on_keep
        self._copies: list[SetAside] = []  # oldest first

    def __iter__(self) -> Iterator[SetAside]:
        return iter(list(self._copies))

    @property
    def size(self) -> int:
        return sum(copy.size for copy in self._copies)

    def keep(
        self,
        seq: int,
        tokens: list[int],
        scales: tuple[float, ...] = (),
        state: Any = None,
        scope: str = "",
    ) -> bool:
        """Copy what ``seq`` holds (``tokens``, under ``scales``, for ``scope``) unless a copy
        already holds all of it; ``state``: those bytes, when the caller has just read them.
        Whether a copy holds it now (each copy went to ``on_keep`` as it was made)."""
        if not tokens:
            return False
        if any(_serves(c, scales, scope) and _holds_tokens(c.tokens, tokens) for c in self._copies):
            return True
        size = llama_cpp.llama_state_seq_get_size(self._ctx, seq) if state is None else len(state)
        if self._max_bytes is not None and size > self._max_bytes:
            _log.warning("slot cache not kept: larger than --cache-ram", slot=seq, bytes=size)
            return False
        self._copies = [
            c
            for c in self._copies
            if not (_serves(c, scales, scope) and _holds_tokens(tokens, c.tokens))
        ]
        held = self.size
        while self._copies and self._max_bytes is not None and held + size > self._max_bytes:
            held -= self._copies.pop(0).size
        if state is None:
            state = seq_state(self._ctx, seq, size)
        if state is None:
            _log.warning("slot cache not kept: llama.cpp could not copy it", slot=seq)
            return False
        copy = SetAside(list(tokens), state, scales, scope)
        self._copies.append(copy)
        if self._on_keep is not None:
            self._on_keep(copy)
        return True

    def restore(
        self,
        seq: int,
        prompt: list[int],
        have: int,
        scales: tuple[float, ...] = (),
        scope: str = "",
        *,
        began: Callable[[], None] | None = None,
    ) -> list[int] | None:
        """Load the copy made under ``scales`` in ``scope`` that shares the most with ``prompt``
        into ``seq``, when it shares more than the ``have`` tokens the slot already reuses; the
        tokens ``seq`` then holds (empty when llama.cpp refused the copy and cleared it), or
        None when ``seq`` is untouched."""
        best: tuple[int, SetAside] | None = None
        for copy in self._copies:
            if not _serves(copy, scales, scope):
                continue
            shared = common_prefix(copy.tokens, prompt)
            if shared > (best[0] if best else have) and shared >= _MIN_KEPT * len(copy.tokens):
                best = (shared, copy)
        if best is None:
            return None
        copy = best[1]
        if began is not None:
            began()
        self._copies.remove(copy)
        if llama_cpp.llama_state_seq_set_data(self._ctx, copy.state, copy.size, seq) != copy.size:
            _log.warning("slot cache copy not restored: llama.cpp refused it", slot=seq)
            llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self._ctx), seq, -1, -1)
            return []
        return copy.tokens

    def clear(self) -> None:
        self._copies = []
