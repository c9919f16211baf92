"""A tiny random-weight multimodal projector (``mmproj``) GGUF for the tiny text model.

It is a LLaVA-style ``mlp`` projector, the simplest clip.cpp loads: a two-block ViT over
8x8 patches of a 32x32 image (16 patches, so an image costs 16 prompt tokens) and a two-layer
MLP into the text model's embedding size. The output means nothing; what matters is that
libmtmd loads it, turns an image into embeddings the text model decodes, and that those
embeddings change what the model says.
"""

from __future__ import annotations

import pathlib

import gguf
import numpy as np
import numpy.typing as npt

from tests.support.tiny_gguf import TEXT_EMBEDDING_LENGTH

__all__ = ["IMAGE_TOKENS", "write_tiny_mmproj"]

_IMAGE_SIZE = 32
_PATCH_SIZE = 8
IMAGE_TOKENS = (_IMAGE_SIZE // _PATCH_SIZE) ** 2
_N_EMBD = 32  # the vision encoder's width
_N_HEAD = 4
_N_FF = 48  # differs from _N_EMBD: clip.cpp swaps up/down when ffn_down's input is n_embd
_N_BLOCKS = 2  # llava features come from the second-to-last block
_N_HIDDEN = 48  # the projector's hidden width


def _weight(rng: np.random.Generator, *shape: int, scale: float = 0.1) -> npt.NDArray[np.float32]:
    # numpy shapes are ggml's ne reversed: (out, in) is an in -> out projection.
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)


def write_tiny_mmproj(path: pathlib.Path, *, seed: int = 1) -> pathlib.Path:
    """Write the projector to ``path`` and return ``path``; same seed, same bytes."""
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path, "clip")
    writer.add_name("tiny-mmproj")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_string("clip.projector_type", "mlp")
    writer.add_bool("clip.use_gelu", True)
    writer.add_uint32("clip.vision.image_size", _IMAGE_SIZE)
    writer.add_uint32("clip.vision.patch_size", _PATCH_SIZE)
    writer.add_uint32("clip.vision.embedding_length", _N_EMBD)
    writer.add_uint32("clip.vision.feed_forward_length", _N_FF)
    writer.add_uint32("clip.vision.block_count", _N_BLOCKS)
    writer.add_uint32("clip.vision.projection_dim", TEXT_EMBEDDING_LENGTH)
    writer.add_uint32("clip.vision.attention.head_count", _N_HEAD)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])

    ones = np.ones(_N_EMBD, dtype=np.float32)
    zeros = np.zeros(_N_EMBD, dtype=np.float32)
    writer.add_tensor("v.patch_embd.weight", _weight(rng, _N_EMBD, 3, _PATCH_SIZE, _PATCH_SIZE))
    writer.add_tensor("v.position_embd.weight", _weight(rng, IMAGE_TOKENS, _N_EMBD))
    writer.add_tensor("v.pre_ln.weight", ones)
    writer.add_tensor("v.pre_ln.bias", zeros)
    for b in range(_N_BLOCKS):
        blk = f"v.blk.{b}"
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            writer.add_tensor(f"{blk}.{name}.weight", _weight(rng, _N_EMBD, _N_EMBD))
            writer.add_tensor(f"{blk}.{name}.bias", zeros)
        for name in ("ln1", "ln2"):
            writer.add_tensor(f"{blk}.{name}.weight", ones)
            writer.add_tensor(f"{blk}.{name}.bias", zeros)
        writer.add_tensor(f"{blk}.ffn_up.weight", _weight(rng, _N_FF, _N_EMBD))
        writer.add_tensor(f"{blk}.ffn_up.bias", np.zeros(_N_FF, dtype=np.float32))
        writer.add_tensor(f"{blk}.ffn_down.weight", _weight(rng, _N_EMBD, _N_FF))
        writer.add_tensor(f"{blk}.ffn_down.bias", zeros)
    writer.add_tensor("mm.0.weight", _weight(rng, _N_HIDDEN, _N_EMBD))
    writer.add_tensor("mm.0.bias", np.zeros(_N_HIDDEN, dtype=np.float32))
    # Embeddings as large as the text model's token rows, so an image visibly steers it.
    writer.add_tensor("mm.2.weight", _weight(rng, TEXT_EMBEDDING_LENGTH, _N_HIDDEN))
    writer.add_tensor("mm.2.bias", np.zeros(TEXT_EMBEDDING_LENGTH, dtype=np.float32))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
