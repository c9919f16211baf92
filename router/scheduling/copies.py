"""Which copy of a model a request goes to (docs/scaling.md, "Replicas").

A model with ``replicas = N`` runs up to N workers, its copies (router/workers/pool.py). A
request goes to the least busy copy that serves (fewest requests in flight; the first on a tie),
except that a conversation stays on the copy holding its KV cache, so its next turn reuses the
cached prompt. A conversation is known by its ``X-Conversation-Id`` header, else by its long
prompt prefix: a hash of the first :data:`PREFIX_BYTES` bytes of its messages (or prompt) as
compact JSON, for a prompt longer than that; a shorter prompt has little cache to keep. Each
conversation's copy is remembered in a bounded map: the :data:`AFFINITY_CAP` most recently used
conversations. When its copy no longer serves (stopped, unloaded, its node gone), the
conversation moves to the copy chosen as for a new one. When no copy serves, a request waits for
one that loads, else for the first that does not run (the scheduler loads it).

The automatic bound (``replicas-max``): a model whose waiting requests outnumber its slots for
:data:`BUSY_SECONDS` gets one more copy where there is room (another after as long again, up
to ``replicas-max`` copies in all), and each such copy is given back once nobody waits for the
model and it has been idle for :data:`IDLE_SECONDS`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from router.scheduling.admission import slots
from router.scheduling.waiting_line import WaitingLine
from router.workers.model_state import ModelState, Status
from router.workers.pool import WorkerPool

__all__ = [
    "AFFINITY_CAP",
    "BUSY_SECONDS",
    "IDLE_SECONDS",
    "PREFIX_BYTES",
    "Affinity",
    "Copies",
    "conversation_key",
]

AFFINITY_CAP = 4096  # conversations remembered, all models together (about 150 bytes each)
PREFIX_BYTES = 1024
BUSY_SECONDS = 5.0  # a queue longer than the model's slots this long: one more copy
IDLE_SECONDS = 30.0  # an automatic copy idle this long, nobody waiting: given back


class _Prompt(msgspec.Struct):
    """What a prompt prefix is read from: a chat's messages, else a completion's prompt."""

    messages: Any = None
    prompt: Any = None


def conversation_key(conversation: str | None, body: bytes | None) -> str | None:
    """What keeps a request on one copy: its ``X-Conversation-Id``, else its long prompt
    prefix; None: neither (the least busy copy takes it)."""
    if conversation:
        return "id:" + conversation
    if not body:
        return None
    try:
        prompt = msgspec.json.decode(body, type=_Prompt)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None  # the worker tells the client what is wrong with it
    text = msgspec.json.encode(prompt.messages if prompt.messages is not None else prompt.prompt)
    if len(text) <= PREFIX_BYTES:
        return None
    return "prefix:" + hashlib.blake2b(text[:PREFIX_BYTES], digest_size=16).hexdigest()


class Copies:
    """The scheduler's questions about copies: which takes a request, which to load now."""

    def __init__(
        self,
        pool: WorkerPool,
        line: WaitingLine,
        fits: Callable[[ModelState], bool],
        backoff_left: Callable[[ModelState], float],
        clock: Callable[[], float],
    ) -> None:
        self._pool = pool
        self._line = line
        self._fits = fits
        self._backoff_left = backoff_left
        self._clock = clock
        self._pressed: dict[str, float] = {}  # since when a model's queue outnumbers its slots
        self.affinity = Affinity()

    def pick(self, name: str, conversation: str | None) -> ModelState:
        """The copy of the model ``name`` (or alias) a request goes to."""
        state = self._pool.get(name)
        if state.entry.most_copies == 1:
            return state
        return self.affinity.choose(self._pool.copies(state.name), conversation)

    def to_start(self, state: ModelState) -> list[ModelState]:
        """The copies of ``state``'s model to load now: those that do not run, where there is
        room, while nobody waits for another model (a copy never makes a model wait or be
        evicted). Asked as a copy takes a request, so a lost copy comes back from then on."""
        fixed = self._pool.copies(state.name)[: state.entry.replicas]
        return [copy for copy in fixed if len(fixed) > 1 and self._may_load(copy)]

    def _may_load(self, copy: ModelState) -> bool:
        return (
            not copy.running
            and not set(self._line.models()) - {copy.name}
            and not self._pool.holds.held(copy.name)
            and self._backoff_left(copy) <= 0
            and self._fits(copy)
        )

    def bound(self) -> tuple[list[ModelState], list[ModelState]]:
        """The automatic bound, asked every half second: the copies to load now and those to
        give back (``replicas-max``)."""
        now, load, back = self._clock(), list[ModelState](), list[ModelState]()
        for name in self._pool.models:
            copies = self._pool.copies(name)
            entry = copies[0].entry
            extra = copies[entry.replicas :]
            if not extra:
                continue
            # A first load is not hurried by loading more: only a queue for a serving model.
            serving = any(copy.serving for copy in copies)
            if serving and self._line.waiting(name) > slots(copies[0]):
                since = self._pressed.setdefault(name, now)
                idle = [copy for copy in extra if self._may_load(copy)][:1]
                if now - since >= BUSY_SECONDS and idle:
                    load += idle
                    self._pressed[name] = now  # the next one, if still needed, as long after
                continue
            self._pressed.pop(name, None)
            back += [
                copy
                for copy in extra
                if copy.serving and copy.in_flight == 0 and now - copy.last_used >= IDLE_SECONDS
            ]
        return load, back


class Affinity:
    """The rule, and the remembered conversations: (model, key) -> the copy's index."""

    def __init__(self, cap: int = AFFINITY_CAP) -> None:
        self._cap = cap
        self._homes: OrderedDict[tuple[str, str], int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._homes)

    def choose(self, copies: Sequence[ModelState], key: str | None = None) -> ModelState:
        """The copy a request with conversation ``key`` goes to; ``copies`` the model's, the
        first first."""
        if len(copies) == 1:
            return copies[0]
        home = (copies[0].name, key) if key is not None else None
        index = self._homes.get(home) if home is not None else None
        if home is not None and index is not None and index < len(copies) and copies[index].serving:
            self._homes.move_to_end(home)
            return copies[index]
        serving = [copy for copy in copies if copy.serving]
        if not serving:
            loading = [c for c in copies if c.status is Status.LOADING and not c.stop_requested]
            return next(iter(loading), None) or next(
                (copy for copy in copies if not copy.running), copies[0]
            )
        chosen = min(serving, key=lambda copy: copy.in_flight)
        if home is not None:
            self._homes[home] = copies.index(chosen)
            self._homes.move_to_end(home)
            if len(self._homes) > self._cap:
                self._homes.popitem(last=False)
        return chosen
