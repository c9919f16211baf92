"""llama-server's token layouts for fill-in-the-middle (``/infill``) and reranking prompts.

Each is built from a model's special tokens around the caller's text, which is tokenized plain
(no special tokens added or parsed), as llama-server's ``format_prompt_infill`` and
``format_prompt_rerank`` do (``tools/server/server-common.cpp``).
"""

from __future__ import annotations

from worker.engine.llama_model import LlamaModel
from worker.host.llama_bindings import llama_cpp

__all__ = ["infill_tokens", "rerank_tokens"]


def _plain(model: LlamaModel, text: str) -> list[int]:
    return model.tokenize(text.encode(), False, False)


def infill_tokens(
    model: LlamaModel,
    prefix: str,
    suffix: str,
    prompt: str,
    extra: list[tuple[str, str]],
    spm: bool = False,
) -> list[int]:
    """llama-server's fill-in-the-middle layout; ``ValueError`` for models without FIM.

    [extra files] [BOS] FIM_PRE prefix prompt FIM_SUF suffix FIM_MID, extra files being
    FIM_SEP filename text each when the model has a separator token; with ``spm``
    (``--spm-infill``, for models trained that way) the suffix part comes before the prefix's.
    """
    vocab = model.vocab
    pre, suf, mid = (
        llama_cpp.llama_vocab_fim_pre(vocab),
        llama_cpp.llama_vocab_fim_suf(vocab),
        llama_cpp.llama_vocab_fim_mid(vocab),
    )
    missing = [name for name, token in (("prefix", pre), ("suffix", suf), ("middle", mid))
               if token < 0]  # fmt: skip
    if missing:
        raise ValueError(f"Infill is not supported by this model: no {', '.join(missing)} token")
    sep = llama_cpp.llama_vocab_fim_sep(vocab)
    tokens: list[int] = []
    for filename, text in extra:
        tokens += (
            [sep, *_plain(model, f"{filename}\n")]
            if sep >= 0
            else _plain(model, "\n\n--- snippet ---\n\n")
        )
        tokens += _plain(model, text)
    if model.add_bos_token():
        tokens.append(model.token_bos())
    before = [pre, *_plain(model, prefix), *_plain(model, prompt)]
    after = [suf, *_plain(model, suffix)]
    return [*tokens, *(after + before if spm else before + after), mid]


def rerank_tokens(model: LlamaModel, query: str, document: str) -> list[int]:
    """llama-server's reranking input for one document.

    The GGUF's ``rerank`` template when it has one (``{query}`` and ``{document}`` filled
    in, special tokens parsed, none added); otherwise the cross-encoder layout
    [BOS] query [EOS] [SEP] document [EOS], each marker where the vocabulary asks for it.
    """
    template = llama_cpp.llama_model_chat_template(model.model, b"rerank")
    if template is not None:
        text = template.decode("utf-8", "replace")
        text = text.replace("{query}", query).replace("{document}", document)
        return model.tokenize(text.encode(), False, True)
    vocab = model.vocab
    eos = llama_cpp.llama_vocab_eos(vocab)
    if eos == llama_cpp.LLAMA_TOKEN_NULL:
        eos = llama_cpp.llama_vocab_sep(vocab)
    add_eos = llama_cpp.llama_vocab_get_add_eos(vocab)
    tokens = [llama_cpp.llama_vocab_bos(vocab)] if llama_cpp.llama_vocab_get_add_bos(vocab) else []
    tokens += _plain(model, query)
    tokens += [eos] if add_eos else []
    tokens += [llama_cpp.llama_vocab_sep(vocab)] if llama_cpp.llama_vocab_get_add_sep(vocab) else []
    tokens += _plain(model, document)
    return tokens + ([eos] if add_eos else [])
