"""llama-server's prompt shapes: text, tokens, both mixed, JSON objects, and lists of those.

A raw prompt (``/completion``'s ``prompt``, ``/v1/embeddings``' ``input``) is one of
(``server-common.cpp``, ``tokenize_input_prompts``):

- a string, or a list of token ids and strings mixed (one prompt; BOS goes in front only when
  the first element is a string);
- a list of token ids (one prompt, as given);
- ``{"prompt_string": ..., "multimodal_data": [...]}`` (one prompt; media need a projector);
- for embeddings also ``{"content": [{"type": "text", "text": ...}, ...]}``, OpenAI's parts;
- a list of any of these, one prompt each, unless it holds a token id (then it is one prompt).

Errors are :class:`PromptError`, a ``ValueError`` whose message names what is wrong; the routes
answer them with 400.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PromptError", "Tokenize", "tokenize_prompts"]

# tokenize(text, add_special) -> token ids.
Tokenize = Callable[[str, bool], list[int]]

_PROMPT_STRING = "prompt_string"
_MULTIMODAL_DATA = "multimodal_data"
_MEDIA_PARTS = ("image_url", "input_audio", "input_video")


class PromptError(ValueError):
    """The prompt has a shape llama-server refuses too."""


def _is_token(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _mixed(value: list[Any], tokenize: Tokenize) -> list[int]:
    tokens: list[int] = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            tokens += tokenize(item, index == 0)
        elif _is_token(item):
            tokens.append(item)
        else:
            raise PromptError("a prompt list mixes token ids and strings only")
    return tokens


def _content_parts(parts: Any, tokenize: Tokenize) -> list[int]:
    if not isinstance(parts, list):
        raise PromptError('"content" must be an array')
    text = ""
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            text += part["text"]
        elif kind in _MEDIA_PARTS:
            raise PromptError(f"{kind}: the model is not multimodal (no --mmproj)")
        else:
            raise PromptError(f"unsupported content part type: {kind!r}")
    return tokenize(text, True)


def _one(value: Any, tokenize: Tokenize, *, content_parts: bool) -> list[int]:
    if isinstance(value, str):
        return tokenize(value, True)
    if isinstance(value, list):
        return _mixed(value, tokenize)
    if isinstance(value, dict):
        if content_parts and "content" in value:
            return _content_parts(value["content"], tokenize)
        if _PROMPT_STRING in value:
            if _MULTIMODAL_DATA in value:
                raise PromptError(
                    "Multimodal data provided, but model does not support multimodal requests."
                )
            inner = value[_PROMPT_STRING]
            if not isinstance(inner, str | list):
                raise PromptError(f"{_PROMPT_STRING} must be a string or a list of tokens")
            return _one(inner, tokenize, content_parts=False)
    raise PromptError(
        '"prompt" elements must be a string, a list of tokens, a JSON object containing a '
        "prompt string, or a list of mixed strings & tokens."
    )


def tokenize_prompts(
    value: Any, tokenize: Tokenize, *, content_parts: bool = False
) -> list[list[int]]:
    """One token list per prompt in ``value``; ``content_parts`` admits OpenAI content objects
    (embeddings). An empty list of prompts is a :class:`PromptError`."""
    if isinstance(value, list) and not any(_is_token(item) for item in value):
        prompts = [_one(item, tokenize, content_parts=content_parts) for item in value]
    else:
        prompts = [_one(value, tokenize, content_parts=content_parts)]
    if not prompts:
        raise PromptError('"prompt" must not be empty')
    return prompts
