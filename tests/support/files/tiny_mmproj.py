"""Tiny random-weight multimodal projectors (``mmproj``) for the tiny text model.

The vision one is a LLaVA-style ``mlp`` projector, the simplest clip.cpp loads: a two-block
ViT over 8x8 patches of a 32x32 image (16 patches, so an image costs 16 prompt tokens) and a
two-layer MLP into the text model's embedding size. The audio one is a ``qwen2a`` projector:
a one-block Whisper-style encoder over 128 mel bins and one linear layer; libmtmd pads audio
to 30 s chunks, so a short clip costs 750 prompt tokens (plus the text of its start and end
markers). The output means nothing; what matters is that libmtmd loads them, turns media into
embeddings the text model decodes, and that those embeddings change what the model says.
"""

from __future__ import annotations

import pathlib

import gguf
import numpy as np
import numpy.typing as npt

from tests.support.files.tiny_gguf import TEXT_EMBEDDING_LENGTH

__all__ = ["AUDIO_TOKENS", "IMAGE_TOKENS", "write_tiny_audio_mmproj", "write_tiny_mmproj"]

_IMAGE_SIZE = 32
_PATCH_SIZE = 8
IMAGE_TOKENS = (_IMAGE_SIZE // _PATCH_SIZE) ** 2
_MEL_BINS = 128
_AUDIO_POSITIONS = 1500  # 30 s of 10 ms mel frames, halved by the encoder's strided conv
AUDIO_TOKENS = _AUDIO_POSITIONS // 2  # qwen2a pools pairs of positions
_N_EMBD = 32  # the encoders' width
_N_HEAD = 4
_N_FF = 48  # differs from _N_EMBD: clip.cpp swaps up/down when ffn_down's input is n_embd
_N_HIDDEN = 48  # the vision projector's hidden width


def _weight(rng: np.random.Generator, *shape: int, scale: float = 0.1) -> npt.NDArray[np.float32]:
    # numpy shapes are ggml's ne reversed: (out, in) is an in -> out projection.
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)


def _zeros(*shape: int) -> npt.NDArray[np.float32]:
    return np.zeros(shape, dtype=np.float32)


def _writer(path: pathlib.Path, name: str, modality: str, blocks: int) -> gguf.GGUFWriter:
    """A projector GGUF with the keys every encoder has (``modality``: vision or audio)."""
    writer = gguf.GGUFWriter(path, "clip")
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_bool(f"clip.has_{modality}_encoder", True)
    writer.add_uint32(f"clip.{modality}.embedding_length", _N_EMBD)
    writer.add_uint32(f"clip.{modality}.feed_forward_length", _N_FF)
    writer.add_uint32(f"clip.{modality}.block_count", blocks)
    writer.add_uint32(f"clip.{modality}.projection_dim", TEXT_EMBEDDING_LENGTH)
    writer.add_uint32(f"clip.{modality}.attention.head_count", _N_HEAD)
    writer.add_float32(f"clip.{modality}.attention.layer_norm_epsilon", 1e-5)
    return writer


def _add_blocks(
    writer: gguf.GGUFWriter, rng: np.random.Generator, prefix: str, blocks: int, *, key_bias: bool
) -> None:
    """Pre-norm transformer blocks, named as clip.cpp loads them (Whisper's keys have no bias)."""
    ones, zeros = np.ones(_N_EMBD, dtype=np.float32), _zeros(_N_EMBD)
    for b in range(blocks):
        blk = f"{prefix}.blk.{b}"
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            writer.add_tensor(f"{blk}.{name}.weight", _weight(rng, _N_EMBD, _N_EMBD))
            if name != "attn_k" or key_bias:
                writer.add_tensor(f"{blk}.{name}.bias", zeros)
        for name in ("ln1", "ln2"):
            writer.add_tensor(f"{blk}.{name}.weight", ones)
            writer.add_tensor(f"{blk}.{name}.bias", zeros)
        writer.add_tensor(f"{blk}.ffn_up.weight", _weight(rng, _N_FF, _N_EMBD))
        writer.add_tensor(f"{blk}.ffn_up.bias", _zeros(_N_FF))
        writer.add_tensor(f"{blk}.ffn_down.weight", _weight(rng, _N_EMBD, _N_FF))
        writer.add_tensor(f"{blk}.ffn_down.bias", zeros)


def _finish(writer: gguf.GGUFWriter, path: pathlib.Path) -> pathlib.Path:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_tiny_mmproj(path: pathlib.Path, *, seed: int = 1) -> pathlib.Path:
    """Write the vision projector to ``path`` and return ``path``; same seed, same bytes."""
    rng = np.random.default_rng(seed)
    blocks = 2  # llava features come from the second-to-last block
    writer = _writer(path, "tiny-mmproj", "vision", blocks)
    writer.add_string("clip.projector_type", "mlp")
    writer.add_bool("clip.use_gelu", True)
    writer.add_uint32("clip.vision.image_size", _IMAGE_SIZE)
    writer.add_uint32("clip.vision.patch_size", _PATCH_SIZE)
    writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    writer.add_tensor("v.patch_embd.weight", _weight(rng, _N_EMBD, 3, _PATCH_SIZE, _PATCH_SIZE))
    writer.add_tensor("v.position_embd.weight", _weight(rng, IMAGE_TOKENS, _N_EMBD))
    writer.add_tensor("v.pre_ln.weight", np.ones(_N_EMBD, dtype=np.float32))
    writer.add_tensor("v.pre_ln.bias", _zeros(_N_EMBD))
    _add_blocks(writer, rng, "v", blocks, key_bias=True)
    writer.add_tensor("mm.0.weight", _weight(rng, _N_HIDDEN, _N_EMBD))
    writer.add_tensor("mm.0.bias", _zeros(_N_HIDDEN))
    # Embeddings as large as the text model's token rows, so an image visibly steers it.
    writer.add_tensor("mm.2.weight", _weight(rng, TEXT_EMBEDDING_LENGTH, _N_HIDDEN))
    writer.add_tensor("mm.2.bias", _zeros(TEXT_EMBEDDING_LENGTH))
    return _finish(writer, path)


def write_tiny_audio_mmproj(path: pathlib.Path, *, seed: int = 3) -> pathlib.Path:
    """Write the audio projector to ``path`` and return ``path``; same seed, same bytes."""
    rng = np.random.default_rng(seed)
    writer = _writer(path, "tiny-audio-mmproj", "audio", 1)
    writer.add_string("clip.projector_type", "qwen2a")
    writer.add_uint32("clip.audio.num_mel_bins", _MEL_BINS)
    # Whisper's two convolutions over mel frames, kernel 3 (numpy: out, in, kernel).
    writer.add_tensor("a.conv1d.1.weight", _weight(rng, _N_EMBD, _MEL_BINS, 3))
    writer.add_tensor("a.conv1d.1.bias", _zeros(_N_EMBD, 1))
    writer.add_tensor("a.conv1d.2.weight", _weight(rng, _N_EMBD, _N_EMBD, 3))
    writer.add_tensor("a.conv1d.2.bias", _zeros(_N_EMBD, 1))
    writer.add_tensor("a.position_embd.weight", _weight(rng, _AUDIO_POSITIONS, _N_EMBD))
    _add_blocks(writer, rng, "a", 1, key_bias=False)
    writer.add_tensor("a.post_ln.weight", np.ones(_N_EMBD, dtype=np.float32))
    writer.add_tensor("a.post_ln.bias", _zeros(_N_EMBD))
    writer.add_tensor("mm.a.fc.weight", _weight(rng, TEXT_EMBEDDING_LENGTH, _N_EMBD))
    writer.add_tensor("mm.a.fc.bias", _zeros(TEXT_EMBEDDING_LENGTH))
    return _finish(writer, path)
