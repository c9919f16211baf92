"""Tiny random-weight llama GGUF files, so tests can drive a real llama.cpp without downloads.

The output is gibberish by design; what matters is that the file loads in milliseconds,
tokenizes any UTF-8 text and carries realistic metadata (name, chat template, EOG tokens).
"""

from __future__ import annotations

import pathlib

import gguf
import numpy as np
import numpy.typing as npt

__all__ = ["CHATML_TEMPLATE", "TEXT_EMBEDDING_LENGTH", "WORDS", "spm_vocab", "write_tiny_gguf"]

# Deliberately not byte-identical to llama-cpp-python's built-in CHATML_CHAT_TEMPLATE: an exact
# match would make it pick its hard-coded "chatml" format instead of rendering this template,
# and tests want the template-from-GGUF path exercised.
CHATML_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '')"
    " + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

_N_EMBD = 64
TEXT_EMBEDDING_LENGTH = _N_EMBD  # what a projector for this model must produce
_N_BLOCKS = 2
_N_HEAD = 4
_N_HEAD_KV = 2
_N_FF = 128
_HEAD_DIM = _N_EMBD // _N_HEAD

# SentencePiece marks a preceding space with U+2581.
_SPACE = "\u2581"
# A few hundred ordinary pieces so common English tokenizes to words, not bytes.
WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have from"
    " or one had by word but not what all were we when your can said there use an each which"
    " she do how their if will up other about out many then them these so some her would make"
    " like him into time has look two more write go see number no way could people my than"
    " first water been call who oil its now find long down day did get come made may part"
    " once upon hello hi world story little model test"
)
_CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?;:'\"()-_/@#$%&*+=<>[]{}"
)
_SPECIALS: tuple[tuple[str, gguf.TokenType], ...] = (
    ("<unk>", gguf.TokenType.UNKNOWN),
    ("<s>", gguf.TokenType.CONTROL),
    ("</s>", gguf.TokenType.CONTROL),
    ("<|im_start|>", gguf.TokenType.CONTROL),
    ("<|im_end|>", gguf.TokenType.CONTROL),
)
_UNK, _BOS, _EOS, _IM_START, _IM_END = range(len(_SPECIALS))
_FIM_TOKENS = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")


def spm_vocab(words: str) -> tuple[list[str], list[float], list[int]]:
    tokens = [text for text, _ in _SPECIALS]
    types = [int(kind) for _, kind in _SPECIALS]
    # Byte fallback is what lets llama.cpp's SPM tokenizer encode text outside the vocabulary
    # (CJK, emoji, newlines) instead of mapping it to <unk>.
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [int(gguf.TokenType.BYTE)] * 256
    pieces: list[str] = [_SPACE, *_CHARS]
    for word in words.split():
        # SPM only merges adjacent symbols whose concatenation is itself a piece, so every
        # prefix must exist for "▁the" to be reachable from "▁" "t" "h" "e".
        full = _SPACE + word
        pieces += [full[:i] for i in range(2, len(full) + 1)]
    pieces = list(dict.fromkeys(pieces))
    tokens += pieces
    types += [int(gguf.TokenType.NORMAL)] * len(pieces)
    # Higher score merges first; longer pieces win so whole words beat fragments.
    scores = [0.0] * (len(_SPECIALS) + 256)
    scores += [float(len(p)) - i * 1e-3 for i, p in enumerate(pieces)]
    return tokens, scores, types


def _weight(rng: np.random.Generator, rows: int, cols: int) -> npt.NDArray[np.float16]:
    # numpy shape (rows, cols) is ggml ne=[cols, rows], i.e. a cols -> rows projection.
    return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)


def _norm() -> npt.NDArray[np.float32]:
    return np.ones(_N_EMBD, dtype=np.float32)


def write_tiny_gguf(
    path: pathlib.Path,
    *,
    name: str = "tiny",
    chat_template: str | None = CHATML_TEMPLATE,
    context_length: int = 2048,
    seed: int = 0,
    fim: bool = False,
    rerank_template: str | None = None,
    user_tokens: tuple[str, ...] = (),
    attention_gain: float = 1.0,
    words: str = WORDS,
    pooling: str | None = None,
    strings: dict[str, str] | None = None,
    shards: int = 1,
    only_words: tuple[str, str] | None = None,
    prefers: tuple[str, ...] = (),
    ends_after: str | None = None,
) -> pathlib.Path:
    """Write a ~320 KB llama-architecture GGUF to ``path`` and return ``path``.

    Same arguments give byte-identical files. ``chat_template=None`` omits the
    ``tokenizer.chat_template`` key entirely, as some real models do. ``fim=True`` adds
    fill-in-the-middle tokens, as code models have, for ``/infill``. ``rerank_template``
    adds the named ``rerank`` template (``{query}`` and ``{document}`` placeholders) that
    reranker GGUFs carry. ``attention_gain`` scales the value and output projections: with
    the default, what a token attends to barely moves the logits and greedy output depends on
    the last token alone; a larger gain makes earlier context (an image) change the answer.
    ``user_tokens`` adds user-defined tokens such as ``<tool_call>``, which real models have as
    one token each, always rendered as text; a test can make the model write one with
    ``logit_bias``.
    Other ``words`` (space-separated) make another vocabulary, such as a
    draft model llama-server would refuse for the default one.
    ``pooling`` (``mean``, ``cls``, ``last``...) sets the pooling type
    embedding models declare, which llama-server needs before it serves ``/v1/embeddings``.
    ``strings`` adds metadata keys with text values (``general.sampling.top_k``: the sampling
    defaults a model file can carry).
    ``shards`` > 1 writes a split model as llama.cpp's ``gguf-split`` does:
    ``{stem}-00001-of-0000N.gguf`` beside ``path``, the tensors shared out in order, every shard
    carrying ``split.no``, ``split.count`` and ``split.tensors.count``; the first shard's path
    is returned. ``only_words`` (two words of ``words``) makes a model that writes nothing else:
    their output rows are opposite, so one of the two scores above 0 whatever the context, and
    every other row is 0; for a stand-in whose test looks for those words in the answer.
    ``prefers`` (tokens, most preferred first) makes a model that ranks those tokens above all
    others whatever the context: every token's embedding leans one way (a large first
    component) and only their output rows read it. Unconstrained, it writes the first; under a
    grammar, the first the grammar allows (``<tool_call>``, then ``</tool_call>``, ``{`` ...:
    a model that answers with a tool call from real generation, its lazy grammar writing it).
    With it, ``ends_after`` (a token) flips the lean of that token's embedding, so that right
    after it the model ends its turn (``<|im_end|>``, which it never prefers otherwise).
    """
    tokens, scores, types = spm_vocab(words)
    fim_ids = list(range(len(tokens), len(tokens) + len(_FIM_TOKENS))) if fim else []
    if fim:
        tokens += list(_FIM_TOKENS)
        scores += [0.0] * len(_FIM_TOKENS)
        types += [int(gguf.TokenType.CONTROL)] * len(_FIM_TOKENS)
    tokens += list(user_tokens)
    scores += [0.0] * len(user_tokens)
    types += [int(gguf.TokenType.USER_DEFINED)] * len(user_tokens)
    rng = np.random.default_rng(seed)
    n_kv = _N_HEAD_KV * _HEAD_DIM

    # 3 tensors outside the blocks, 9 in each: split_max_tensors makes exactly ``shards`` files.
    n_tensors = 3 + 9 * _N_BLOCKS
    per_shard = -(-n_tensors // shards) if shards > 1 else 0
    writer = gguf.GGUFWriter(path, "llama", split_max_tensors=per_shard)
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_context_length(context_length)
    writer.add_embedding_length(_N_EMBD)
    writer.add_block_count(_N_BLOCKS)
    writer.add_feed_forward_length(_N_FF)
    writer.add_head_count(_N_HEAD)
    writer.add_head_count_kv(_N_HEAD_KV)
    writer.add_rope_dimension_count(_HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-5)
    if pooling is not None:
        writer.add_pooling_type(gguf.PoolingType[pooling.upper()])
    writer.add_vocab_size(len(tokens))

    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(_UNK)
    writer.add_bos_token_id(_BOS)
    writer.add_eos_token_id(_EOS)
    # ChatML models end a turn with <|im_end|>, not </s>; marking it EOT makes llama.cpp
    # treat it as end-of-generation.
    writer.add_eot_token_id(_IM_END)
    for key, token_id in zip(
        (
            gguf.Keys.Tokenizer.FIM_PRE_ID,
            gguf.Keys.Tokenizer.FIM_SUF_ID,
            gguf.Keys.Tokenizer.FIM_MID_ID,
        ),
        fim_ids,
        strict=False,
    ):
        writer.add_uint32(key, token_id)
    for key, value in (strings or {}).items():
        writer.add_string(key, value)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    if rerank_template is not None:
        writer.add_string(
            gguf.Keys.Tokenizer.CHAT_TEMPLATE_N.format(name="rerank"), rerank_template
        )

    embeddings = _weight(rng, len(tokens), _N_EMBD)
    if prefers:
        embeddings[:, 0] = 1.0
        if ends_after is not None:
            embeddings[tokens.index(ends_after), 0] = -1.0
    writer.add_tensor("token_embd.weight", embeddings)
    # With tiny weights the logits are near-uniform and ~45% of samples would be control or
    # stray byte tokens, which stream as empty deltas. Zero rows for those and large rows for
    # ordinary pieces make sampled text almost surely visible words; the price is that
    # EOS/EOT are effectively never sampled, so callers must bound max_tokens.
    head = _weight(rng, len(tokens), _N_EMBD) * np.float16(50.0)
    head[: len(_SPECIALS) + 256] = 0
    if only_words is not None:
        first, second = (tokens.index(_SPACE + word) for word in only_words)
        row = head[first].copy()
        head[:] = 0
        head[first], head[second] = row, -row
    if prefers:
        head[:, 0] = 0
        for rank, token in enumerate(prefers):
            head[tokens.index(token), 0] = 50.0 - 5.0 * rank
        if ends_after is not None:
            head[_IM_END, 0] = -60.0  # the last choice, unless the state leans the other way
    writer.add_tensor("output.weight", head)
    writer.add_tensor("output_norm.weight", _norm())
    for b in range(_N_BLOCKS):
        blk = f"blk.{b}"
        writer.add_tensor(f"{blk}.attn_norm.weight", _norm())
        writer.add_tensor(f"{blk}.attn_q.weight", _weight(rng, _N_EMBD, _N_EMBD))
        writer.add_tensor(f"{blk}.attn_k.weight", _weight(rng, n_kv, _N_EMBD))
        gain = np.float16(attention_gain)
        writer.add_tensor(f"{blk}.attn_v.weight", _weight(rng, n_kv, _N_EMBD) * gain)
        writer.add_tensor(f"{blk}.attn_output.weight", _weight(rng, _N_EMBD, _N_EMBD) * gain)
        writer.add_tensor(f"{blk}.ffn_norm.weight", _norm())
        writer.add_tensor(f"{blk}.ffn_gate.weight", _weight(rng, _N_FF, _N_EMBD))
        writer.add_tensor(f"{blk}.ffn_up.weight", _weight(rng, _N_FF, _N_EMBD))
        writer.add_tensor(f"{blk}.ffn_down.weight", _weight(rng, _N_EMBD, _N_FF))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return writer.format_shard_names(path)[0]
