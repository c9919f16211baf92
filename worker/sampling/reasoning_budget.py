"""``--reasoning-budget``: at most N tokens of thinking, then the end tag is forced.

A port of llama.cpp's ``common_reasoning_budget`` sampler (common/reasoning-budget.cpp), which
lives in llama.cpp's common library rather than in the one llama-cpp-python binds: it watches
the tokens for the thinking's start tag, counts the tokens after it, and once the budget is
spent makes the end tag's tokens (after ``--reasoning-budget-message``'s, when set) the only
ones the model may write. A natural end tag stops
the count; a new start tag starts a fresh budget. 0 closes the thinking at once.

The sampler is made by llama.cpp (``llama_sampler_init``), so the chain that owns it frees it
as any other; its callbacks and the shared interface are this module's, and each sampler's
state sits in :data:`_STATES` under the id its ``ctx`` carries, until llama.cpp frees it.
"""

from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass
from typing import Any

from worker.host.llama_bindings import llama_cpp

__all__ = ["ReasoningBudget", "reasoning_budget_sampler"]


@dataclass(frozen=True, slots=True)
class ReasoningBudget:
    budget: int  # tokens of thinking allowed, >= 0
    start: tuple[int, ...]  # the start tag's tokens
    end: tuple[int, ...]  # the end tag's tokens, forced once the budget is spent
    counting: bool  # the prompt already opened the thinking
    message: tuple[int, ...] = ()  # --reasoning-budget-message: forced before the end tag

    @property
    def forced(self) -> tuple[int, ...]:
        return self.message + self.end


@dataclass(slots=True)
class _State:
    spec: ReasoningBudget
    phase: str  # idle, counting, forcing, done
    remaining: int
    recent: list[int]  # the last tokens, to spot a start or end tag
    forced: int = 0  # end-tag tokens already forced

    def begin_counting(self) -> None:
        self.phase, self.remaining = "counting", self.spec.budget
        if self.remaining <= 0:
            self.phase, self.forced = "forcing", 0

    def ends_with(self, tag: tuple[int, ...]) -> bool:
        return bool(tag) and tuple(self.recent[-len(tag) :]) == tag

    def accept(self, token: int) -> None:
        self.recent = [*self.recent[-max(len(self.spec.start), len(self.spec.end)) :], token]
        if self.phase in ("idle", "done"):
            if self.ends_with(self.spec.start):
                self.begin_counting()
        elif self.phase == "counting":
            if self.ends_with(self.spec.end):
                self.phase = "done"
                return
            self.remaining -= 1
            if self.remaining <= 0:
                self.phase, self.forced = "forcing", 0
        else:
            self.forced += 1
            if self.forced >= len(self.spec.forced):
                self.phase = "done"


_STATES: dict[int, _State] = {}
_IDS = itertools.count(1)


def _state(sampler: Any) -> _State:
    return _STATES[sampler.contents.ctx]


_NAME = ctypes.create_string_buffer(b"corral-reasoning-budget")


# Returns the address of a buffer that lives as long as the module: a callback declared to
# return ``char *`` would hand llama.cpp memory that ctypes frees right away.
@ctypes.CFUNCTYPE(ctypes.c_void_p, llama_cpp.llama_sampler_p_ctypes)  # type: ignore[untyped-decorator]
def _name(sampler: Any) -> int:
    return ctypes.addressof(_NAME)


@llama_cpp.llama_sampler_i_accept  # type: ignore[untyped-decorator]
def _accept(sampler: Any, token: int) -> None:
    _state(sampler).accept(token)


@llama_cpp.llama_sampler_i_apply  # type: ignore[untyped-decorator]
def _apply(sampler: Any, candidates: Any) -> None:
    state = _state(sampler)
    if state.phase != "forcing" or state.forced >= len(state.spec.forced):
        return
    # lazily: numpy is 16 MiB of a worker's memory, and only a budget that is spent needs it
    # (docs/benchmarks.md, Swaps); after the first time it is a lookup in sys.modules.
    import numpy as np

    array = candidates.contents
    data = np.ctypeslib.as_array(array.data, shape=(array.size,))
    data["logit"][data["id"] != state.spec.forced[state.forced]] = -np.inf


@llama_cpp.llama_sampler_i_free  # type: ignore[untyped-decorator]
def _free(sampler: Any) -> None:
    _STATES.pop(sampler.contents.ctx, None)


_INTERFACE = llama_cpp.llama_sampler_i(
    name=ctypes.cast(_name, llama_cpp.llama_sampler_i_name),
    accept=_accept,
    apply=_apply,
    free=_free,
)


def reasoning_budget_sampler(spec: ReasoningBudget) -> Any:
    """A new ``llama_sampler *`` for ``spec``, for a chain to own."""
    key = next(_IDS)
    state = _State(spec, "idle", spec.budget, [])
    if spec.counting:
        state.begin_counting()
    _STATES[key] = state
    return llama_cpp.llama_sampler_init(ctypes.pointer(_INTERFACE), ctypes.c_void_p(key))
