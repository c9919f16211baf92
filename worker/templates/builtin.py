"""llama.cpp's built-in chat templates (``src/llama-chat.cpp``), rendered by llama.cpp itself.

Used for ``--no-jinja`` and for ``--chat-template NAME`` with one of llama.cpp's names
(``llama3``, ``gemma``, ``mistral-v7``, …). ``llama_chat_apply_template`` also recognises a
template's text by its markers, as llama-server's ``--no-jinja`` path does.
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

from worker.host.llama_bindings import llama_cpp

__all__ = ["BuiltinTemplate", "builtin_template_names", "flatten_content"]

# Names Corral accepted before it followed llama.cpp's list.
_ALIASES = {"llama-3": "llama3", "gemma2": "gemma", "gemma3": "gemma"}


@cache
def builtin_template_names() -> tuple[str, ...]:
    """llama.cpp's built-in template names (``llama_chat_builtin_templates``)."""
    count = llama_cpp.llama_chat_builtin_templates(None, 0)
    names = (ctypes.c_char_p * count)()
    llama_cpp.llama_chat_builtin_templates(names, count)
    return tuple(name.decode() for name in names if name is not None)


def canonical_name(name: str) -> str | None:
    """The built-in template ``name`` means, or None when it is not one."""
    name = _ALIASES.get(name, name)
    return name if name in builtin_template_names() else None


def flatten_content(message: dict[str, Any]) -> str:
    """Text of a message for a built-in template: parts joined with newlines."""
    content = message.get("content")
    if isinstance(content, list):
        texts = [
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "\n".join(texts)
    return content if isinstance(content, str) else ""


class BuiltinTemplate:
    """A name or template text that llama.cpp's C++ renderer knows."""

    def __init__(self, name_or_source: str) -> None:
        self.source = name_or_source

    def render(self, messages: list[dict[str, Any]], add_generation_prompt: bool) -> str | None:
        """The prompt, or None when llama.cpp does not know this template."""
        texts = [(m.get("role", "").encode(), flatten_content(m).encode()) for m in messages]
        chat = (llama_cpp.llama_chat_message * max(len(texts), 1))()
        for slot, (role, content) in zip(chat, texts, strict=False):
            slot.role, slot.content = role, content
        size = sum(len(r) + len(c) for r, c in texts) * 2 + 256
        for _ in range(2):
            buffer = ctypes.create_string_buffer(size)
            written = llama_cpp.llama_chat_apply_template(
                self.source.encode(),
                chat,
                len(texts),
                add_generation_prompt,
                buffer,
                size,
            )
            if written < 0:
                return None
            if written <= size:
                return buffer.raw[:written].decode("utf-8", "replace")
            size = written
        return None
