"""Whether a draft model can speak for a target: llama-server's vocabulary rules.

The same checks, in the same order and with the same limits, as
``common_speculative_are_compatible`` (common/speculative.cpp), so a draft llama-server refuses
is refused here too; the answer names the first difference found.
"""

from __future__ import annotations

from typing import Any

from worker.host.llama_bindings import llama_cpp

__all__ = ["vocab_mismatch"]

_MAX_SIZE_DIFFERENCE = 128
_FIRST_CHECKED_TOKEN = 5  # the first few ids are specials that models number differently


def vocab_mismatch(target: Any, draft: Any) -> str | None:
    """Why the draft vocabulary ``draft`` cannot serve ``target`` (both ``llama_vocab_p``)."""
    kind_t, kind_d = llama_cpp.llama_vocab_type(target), llama_cpp.llama_vocab_type(draft)
    if kind_t != kind_d:
        return f"vocabulary types differ (target {kind_t}, draft {kind_d})"
    for name, add, token in (
        ("BOS", llama_cpp.llama_vocab_get_add_bos, llama_cpp.llama_vocab_bos),
        ("EOS", llama_cpp.llama_vocab_get_add_eos, llama_cpp.llama_vocab_eos),
    ):
        adds = add(target), add(draft)
        if adds[0] != adds[1] or (adds[0] and token(target) != token(draft)):
            return (
                f"{name} tokens differ (target adds {adds[0]}, id {token(target)}; "
                f"draft adds {adds[1]}, id {token(draft)})"
            )
    n_t, n_d = llama_cpp.llama_vocab_n_tokens(target), llama_cpp.llama_vocab_n_tokens(draft)
    if abs(n_t - n_d) > _MAX_SIZE_DIFFERENCE:
        return (
            f"vocabulary sizes differ by more than {_MAX_SIZE_DIFFERENCE} "
            f"(target {n_t}, draft {n_d})"
        )
    for token in range(_FIRST_CHECKED_TOKEN, min(n_t, n_d)):
        text_t = llama_cpp.llama_vocab_get_text(target, token)
        text_d = llama_cpp.llama_vocab_get_text(draft, token)
        if text_t != text_d:
            shown = [text.decode("utf-8", "replace") for text in (text_t, text_d)]
            return f"token {token} differs (target '{shown[0]}', draft '{shown[1]}')"
    return None
