"""A tiny sliding-window model (gemma2 architecture), for what only such models do to a cache.

With llama-server's default (no ``--swa-full``) the window layers keep about the last window of
positions, so cutting a slot's cache back to an earlier prefix can leave them without what the
next position needs; worker/cache/checkpoints.py is why that never shows. The weights make the
window matter: the attention's output is scaled up (``post_attention_norm``), so a position that
sees the wrong window gets clearly different logits. Gibberish text, as tiny_gguf's models.
"""

from __future__ import annotations

import pathlib

import gguf
import numpy as np
import numpy.typing as npt

from tests.support.files.tiny_gguf import CHATML_TEMPLATE, WORDS, spm_vocab

__all__ = ["SLIDING_WINDOW", "write_tiny_swa_gguf"]

SLIDING_WINDOW = 16
_N_EMBD, _N_BLOCKS, _N_HEAD, _N_HEAD_KV, _N_FF = 64, 2, 4, 2, 128
_HEAD_DIM = _N_EMBD // _N_HEAD
_N_CONTROL = 5 + 256  # special and byte tokens: zero rows, so text comes out as words
_ATTENTION_GAIN = 10.0


def write_tiny_swa_gguf(path: pathlib.Path, *, context_length: int = 4096) -> pathlib.Path:
    """Write a ~240 KB gemma2 GGUF with a 16-token sliding window to ``path``."""
    tokens, scores, types = spm_vocab(WORDS)
    rng = np.random.default_rng(0)

    def weight(rows: int, cols: int, gain: float = 1.0) -> npt.NDArray[np.float16]:
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02 * gain).astype(
            np.float16
        )

    def norm(gain: float = 1.0) -> npt.NDArray[np.float32]:
        return np.full(_N_EMBD, gain, dtype=np.float32)

    writer = gguf.GGUFWriter(path, "gemma2")
    writer.add_name("tiny-swa")
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_context_length(context_length)
    writer.add_embedding_length(_N_EMBD)
    writer.add_block_count(_N_BLOCKS)
    writer.add_feed_forward_length(_N_FF)
    writer.add_head_count(_N_HEAD)
    writer.add_head_count_kv(_N_HEAD_KV)
    writer.add_key_length(_HEAD_DIM)
    writer.add_value_length(_HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_sliding_window(SLIDING_WINDOW)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_eot_token_id(4)  # <|im_end|>
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHATML_TEMPLATE)
    # gemma2 ties its output to the token embeddings.
    embeddings = weight(len(tokens), _N_EMBD, 50.0)
    embeddings[:_N_CONTROL] = 0
    writer.add_tensor("token_embd.weight", embeddings)
    writer.add_tensor("output_norm.weight", norm())
    kv = _N_HEAD_KV * _HEAD_DIM
    for b in range(_N_BLOCKS):
        blk = f"blk.{b}"
        writer.add_tensor(f"{blk}.attn_norm.weight", norm())
        writer.add_tensor(f"{blk}.attn_q.weight", weight(_N_EMBD, _N_EMBD, 20.0))
        writer.add_tensor(f"{blk}.attn_k.weight", weight(kv, _N_EMBD, 20.0))
        writer.add_tensor(f"{blk}.attn_v.weight", weight(kv, _N_EMBD, 20.0))
        writer.add_tensor(f"{blk}.attn_output.weight", weight(_N_EMBD, _N_EMBD, 20.0))
        writer.add_tensor(f"{blk}.post_attention_norm.weight", norm(_ATTENTION_GAIN))
        writer.add_tensor(f"{blk}.ffn_norm.weight", norm())
        writer.add_tensor(f"{blk}.ffn_gate.weight", weight(_N_FF, _N_EMBD))
        writer.add_tensor(f"{blk}.ffn_up.weight", weight(_N_FF, _N_EMBD))
        writer.add_tensor(f"{blk}.ffn_down.weight", weight(_N_EMBD, _N_FF))
        writer.add_tensor(f"{blk}.post_ffw_norm.weight", norm())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
