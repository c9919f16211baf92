"""Thinking split from the answer: ``<think>…</think>`` and the like, as ``reasoning_content``.

``--reasoning-format`` (and a request's ``reasoning_format``) says what to do with it, as in
llama-server: ``none`` leaves it in the content, ``deepseek`` (and ``auto``) moves it to
``reasoning_content``, ``deepseek-legacy`` does both for a whole answer and leaves it in the
content of a stream. A prompt that ends by opening the thinking (DeepSeek R1, Qwen 3 with
thinking on) means the output starts inside it, without the opening tag.
"""

from __future__ import annotations

from dataclasses import dataclass

from worker.chat.formats.scanning import held_back

__all__ = ["REASONING_FORMATS", "ThinkingTags", "split_reasoning"]

REASONING_FORMATS = ("none", "deepseek", "deepseek-legacy", "auto")


@dataclass(frozen=True, slots=True)
class ThinkingTags:
    start: str = "<think>"
    end: str = "</think>"


def split_reasoning(text: str, tags: ThinkingTags, opened: bool, partial: bool) -> tuple[str, str]:
    """``(reasoning, rest)``; while streaming, text that may still become a tag is held back."""
    body = text
    if not opened:
        stripped = text.lstrip()
        if stripped.startswith(tags.start):
            body = stripped[len(tags.start) :]
        elif partial and stripped and tags.start.startswith(stripped):
            return "", ""  # maybe the opening tag, still arriving
        else:
            return "", text
    end = body.find(tags.end)
    if end < 0:
        if partial:
            body = body[: held_back(body, (tags.end,))]
        return body.strip(), ""
    return body[:end].strip(), body[end + len(tags.end) :].lstrip()
