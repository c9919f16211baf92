"""Stand-in models for a machine with no network: real shapes, random weights, a real tokenizer.

Decode speed and memory depend on a model's tensor shapes, not on their values, so a GGUF with
a real model's shapes and random F16 weights (then quantized by ``llama-quantize``) measures as
the real one does; its text is noise, so generate with ``ignore_eos`` and a fixed token count.
The tokenizer (every ``tokenizer.*`` key) comes from a real GGUF, so prompts tokenize as they
would (../shared/notes/gpu.md has how this was first done).

``python -m bench.support.standin --tokenizer SmolLM2.gguf --shape llama-1b --out B-f16.gguf``
writes one; ``--shape tokenizer`` writes only the tokenizer (1.7 MB for SmolLM2), small enough
to carry to a GPU machine and use there as ``--tokenizer``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import numpy.typing as npt

__all__ = ["SHAPES", "Shape", "write_standin"]


@dataclass(frozen=True)
class Shape:
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    n_ff: int
    n_ctx_train: int


SHAPES = {
    "smollm2-135m": Shape(576, 30, 9, 3, 1536, 8192),
    "smollm2-360m": Shape(960, 32, 15, 5, 2560, 8192),  # SmolLM2-360M's shape
    "llama-1b": Shape(2048, 16, 32, 8, 8192, 131072),  # Llama-3.2-1B's shape
    "llama-8b": Shape(4096, 32, 32, 8, 14336, 131072),  # Llama-3.1-8B's shape
}


def _tokenizer_fields(
    reader: gguf.GGUFReader,
) -> list[tuple[str, object, list[gguf.GGUFValueType]]]:
    return [
        (key, field.contents(), field.types)
        for key, field in reader.fields.items()
        if key.startswith("tokenizer.")
    ]


def write_standin(tokenizer: Path, shape_name: str, out: Path) -> None:
    fields = _tokenizer_fields(gguf.GGUFReader(tokenizer))
    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name(f"standin-{shape_name}")
    for key, value, types in fields:
        writer.add_key_value(key, value, types[0], types[1] if len(types) > 1 else None)
    n_vocab = next(len(v) for k, v, _ in fields if k == "tokenizer.ggml.tokens")  # type: ignore[arg-type]
    if shape_name != "tokenizer":
        shape = SHAPES[shape_name]
        head_dim = shape.n_embd // shape.n_head
        writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
        writer.add_context_length(shape.n_ctx_train)
        writer.add_embedding_length(shape.n_embd)
        writer.add_block_count(shape.n_layer)
        writer.add_feed_forward_length(shape.n_ff)
        writer.add_head_count(shape.n_head)
        writer.add_head_count_kv(shape.n_head_kv)
        writer.add_rope_dimension_count(head_dim)
        writer.add_rope_freq_base(500000.0)
        writer.add_layer_norm_rms_eps(1e-5)
        writer.add_vocab_size(n_vocab)
        _add_tensors(writer, shape, n_vocab)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _add_tensors(writer: gguf.GGUFWriter, shape: Shape, n_vocab: int) -> None:
    # One random pool sliced into every tensor: values do not matter, and drawing a billion
    # normals per model would cost more than the quantization that follows.
    n_kv = shape.n_head_kv * (shape.n_embd // shape.n_head)
    largest = max(n_vocab * shape.n_embd, shape.n_ff * shape.n_embd)
    pool = (np.random.default_rng(0).standard_normal(largest, dtype=np.float32) * 0.02).astype(
        np.float16
    )

    def weight(rows: int, cols: int) -> npt.NDArray[np.float16]:
        return pool[: rows * cols].reshape(rows, cols)

    norm = np.ones(shape.n_embd, dtype=np.float32)
    writer.add_tensor("token_embd.weight", weight(n_vocab, shape.n_embd))
    writer.add_tensor("output_norm.weight", norm)
    for b in range(shape.n_layer):
        blk = f"blk.{b}"
        writer.add_tensor(f"{blk}.attn_norm.weight", norm)
        writer.add_tensor(f"{blk}.attn_q.weight", weight(shape.n_embd, shape.n_embd))
        writer.add_tensor(f"{blk}.attn_k.weight", weight(n_kv, shape.n_embd))
        writer.add_tensor(f"{blk}.attn_v.weight", weight(n_kv, shape.n_embd))
        writer.add_tensor(f"{blk}.attn_output.weight", weight(shape.n_embd, shape.n_embd))
        writer.add_tensor(f"{blk}.ffn_norm.weight", norm)
        writer.add_tensor(f"{blk}.ffn_gate.weight", weight(shape.n_ff, shape.n_embd))
        writer.add_tensor(f"{blk}.ffn_up.weight", weight(shape.n_ff, shape.n_embd))
        writer.add_tensor(f"{blk}.ffn_down.weight", weight(shape.n_embd, shape.n_ff))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokenizer", type=Path, required=True, help="a GGUF to take it from")
    parser.add_argument("--shape", choices=[*SHAPES, "tokenizer"], required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    write_standin(args.tokenizer, args.shape, args.out)


if __name__ == "__main__":
    main()
