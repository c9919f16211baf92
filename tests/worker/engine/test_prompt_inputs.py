"""llama-server's prompt shapes (worker.engine.prompt_inputs), with a tokenizer that spells its
input."""

from __future__ import annotations

from typing import Any

import pytest

from worker.engine.prompt_inputs import PromptError, tokenize_prompts

BOS = 1


def spell(text: str, first: bool) -> list[int]:
    """One token per character (its code point), BOS in front only where asked."""
    return ([BOS] if first else []) + [ord(c) for c in text]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ab", [[BOS, 97, 98]]),
        ([5, 6], [[5, 6]]),  # token ids: as given, no BOS
        ([5, "a", 6], [[5, 97, 6]]),  # mixed: BOS only when a string comes first
        (["a", 5], [[BOS, 97, 5]]),
        (["a", "b"], [[BOS, 97], [BOS, 98]]),  # a list without ids: one prompt each
        ([[5], "a", {"prompt_string": "b"}], [[5], [BOS, 97], [BOS, 98]]),
        ({"prompt_string": [7, "c"]}, [[7, 99]]),
    ],
)
def test_every_shape_llama_server_takes(value: Any, expected: list[list[int]]) -> None:
    assert tokenize_prompts(value, spell) == expected


def test_openai_content_parts_for_embeddings() -> None:
    parts = {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert tokenize_prompts(parts, spell, content_parts=True) == [[BOS, 97, 98]]
    with pytest.raises(PromptError):  # only embeddings take them
        tokenize_prompts(parts, spell)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "must not be empty"),
        ({"content": "a"}, "must be an array"),
        ({"content": [{"type": "unknown"}]}, "unsupported content part"),
        ({"content": [{"type": "image_url", "image_url": {"url": "x"}}]}, "not multimodal"),
        ({"prompt_string": "a", "multimodal_data": ["AAAA"]}, "does not support multimodal"),
        ([5, [6]], "mixes token ids and strings only"),
        (3.5, "must be a string"),
    ],
)
def test_shapes_llama_server_refuses(value: Any, message: str) -> None:
    with pytest.raises(PromptError, match=message):
        tokenize_prompts(value, spell, content_parts=True)
