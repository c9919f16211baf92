"""How a model's KV cache is laid out, for the worker that creates it and the router that plans
memory for it.

Both processes call these functions with the same options, so the router's estimate of a
model's cache is the cache its worker creates: how many slots, whether they share one cache,
whether one hidden sequence more is kept for the router's courtesy (``--courtesy-slot``,
docs/serving.md "Scheduling"), how many tokens the context holds (``--ctx-size``, else the
trained context per stream, as llama-server's common/fit.cpp), and what a token costs in each
``--cache-type-k/-v``.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from corral.options.model_options import ModelOptions

__all__ = [
    "AUTO_SLOTS",
    "CACHE_TYPE_BYTES",
    "KvLayout",
    "KvShape",
    "kv_bytes",
    "kv_layout",
    "kv_shape",
]

# llama-server's automatic slots (--parallel -1, its default): four, sharing one KV cache.
AUTO_SLOTS = 4
# Bytes per cached value for each --cache-type-k/-v (block formats: bytes per block / 32).
CACHE_TYPE_BYTES = {
    "f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32,
    "iq4_nl": 18 / 32, "q5_0": 22 / 32, "q5_1": 24 / 32,
}  # fmt: skip


class KvLayout(msgspec.Struct, frozen=True):
    slots: int  # sequences decoded together (--parallel; automatic: AUTO_SLOTS)
    unified: bool  # one cache the slots share, else each slot its own share of the context
    ctx_size: int  # --ctx-size; 0: the trained context per stream
    type_k: str  # --cache-type-k
    type_v: str  # --cache-type-v
    per_slot: int = 0  # --kv-unified-per-slot: the most tokens one slot may hold; 0: no cap
    courtesy: int = 0  # --courtesy-slot: sequences beyond the slots, shown nowhere

    @property
    def sequences(self) -> int:
        """Sequences the context decodes together: the slots and the courtesy one."""
        return self.slots + self.courtesy

    @property
    def streams(self) -> int:
        """KV streams: one shared cache, or one per sequence."""
        return 1 if self.unified else self.sequences

    def n_ctx(self, n_ctx_train: int) -> int:
        """Tokens of the context, all sequences together. A courtesy sequence of split caches
        gets a slot's share on top of ``--ctx-size``, so that each slot keeps the context it
        was given; a shared cache stays as large, the sequences sharing it as the slots do."""
        if not self.ctx_size:
            return n_ctx_train * self.streams
        if self.unified:
            return self.ctx_size
        return self.ctx_size + self.ctx_size // self.slots * self.courtesy

    def n_ctx_seq(self, n_ctx_train: int) -> int:
        """Tokens one slot's sequence may hold."""
        return self.slot_cap(self.n_ctx(n_ctx_train) // self.streams)

    def slot_cap(self, n_ctx_seq: int) -> int:
        """A sequence's room in a context of ``n_ctx_seq`` per stream, with
        ``--kv-unified-per-slot`` (llama-server's ``n_ctx_slot()``)."""
        return min(n_ctx_seq, self.per_slot) if self.per_slot > 0 else n_ctx_seq


def kv_layout(options: ModelOptions) -> KvLayout:
    """The layout a model's options give. As llama-server: automatic slots (``--parallel``
    -1, its default, or 0) are four sharing one cache whatever ``--kv-unified`` says; a number of
    slots splits the context between them unless ``--kv-unified``. ``--kv-unified-per-slot N``
    caps each slot at N tokens and, without ``--ctx-size``, makes the context slots times N."""
    parallel = options.integer("parallel")
    auto = parallel <= 0
    slots = AUTO_SLOTS if auto else parallel
    per_slot = options.integer("kv-unified-per-slot")
    ctx_size = options.integer("ctx-size")
    if per_slot > 0 and "ctx-size" not in options:
        ctx_size = slots * per_slot  # llama-server's server.cpp sizes the pool so, unless -c
    return KvLayout(
        slots=slots,
        unified=auto or options.flag("kv-unified"),
        ctx_size=ctx_size,
        type_k=options.word("cache-type-k"),
        type_v=options.word("cache-type-v"),
        per_slot=per_slot,
        courtesy=int(options.flag("courtesy-slot")),
    )


class KvShape(msgspec.Struct, frozen=True):
    """What the GGUF header says a token's cache holds: layers and K/V values per layer."""

    layers: int
    key_values: int  # K values per token per layer (key length times KV heads)
    value_values: int
    n_ctx_train: int


def kv_shape(meta: Mapping[str, object]) -> KvShape | None:
    """The cache's shape from a GGUF header's scalars; None where the header says too little."""
    arch = meta.get("general.architecture")

    def number(key: str, default: int = 0) -> int:
        value = meta.get(f"{arch}.{key}", default)
        return int(value) if isinstance(value, int | float) else default

    layers, embd, heads = (
        number("block_count"),
        number("embedding_length"),
        number("attention.head_count"),
    )
    if not (layers and embd and heads):
        return None
    kv_heads = number("attention.head_count_kv", heads)
    return KvShape(
        layers=layers,
        key_values=number("attention.key_length", embd // heads) * kv_heads,
        value_values=number("attention.value_length", embd // heads) * kv_heads,
        n_ctx_train=number("context_length"),
    )


def kv_bytes(shape: KvShape, layout: KvLayout, ctx: int | None = None) -> int:
    """The bytes of the cache; ``ctx``: for this many tokens instead of the layout's context."""
    tokens = layout.n_ctx(shape.n_ctx_train) if ctx is None else ctx
    per_token = shape.key_values * CACHE_TYPE_BYTES[layout.type_k] + (
        shape.value_values * CACHE_TYPE_BYTES[layout.type_v]
    )
    return int(shape.layers * tokens * per_token)
