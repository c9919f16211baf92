"""Tiny random-weight LoRA adapter GGUFs for the models :mod:`tests.support.files.tiny_gguf` writes.

llama.cpp loads an adapter (src/llama-adapter.cpp) when ``general.type`` is ``adapter``,
``adapter.type`` is ``lora``, its architecture is the base model's, and every ``<tensor>.lora_a``
/ ``<tensor>.lora_b`` pair names a base tensor with matching shapes: ``lora_a`` is
``rank x n_in`` and ``lora_b`` is ``n_out x rank`` (numpy order). The shapes are read from the
base file, so the adapter fits whatever the tiny model looks like.
"""

from __future__ import annotations

import pathlib

import gguf
import numpy as np

__all__ = ["write_tiny_lora"]

# The output projection decides the next token directly, so an adapter on it changes greedy
# choices at scale 1 for sure; the attention ones make it a realistic multi-tensor adapter.
_TARGETS = ("output.weight", "blk.0.attn_q.weight", "blk.1.attn_v.weight")


def write_tiny_lora(
    path: pathlib.Path, base: pathlib.Path, *, rank: int = 4, seed: int = 1
) -> pathlib.Path:
    """Write a LoRA adapter for the GGUF at ``base`` to ``path`` and return ``path``."""
    reader = gguf.GGUFReader(base)
    shapes = {tensor.name: tuple(int(n) for n in tensor.data.shape) for tensor in reader.tensors}
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path, arch)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(rank))  # effective scale = alpha / rank = 1
    for name in _TARGETS:
        n_out, n_in = shapes[name]
        # Large enough to outweigh the tiny model's own logits at scale 1.
        lora_a = rng.standard_normal((rank, n_in), dtype=np.float32)
        lora_b = rng.standard_normal((n_out, rank), dtype=np.float32)
        writer.add_tensor(f"{name}.lora_a", lora_a)
        writer.add_tensor(f"{name}.lora_b", lora_b)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
