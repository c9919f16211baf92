"""Chat templates: the GGUF's own, a built-in one by name, or Jinja text (``--chat-template``).

Rendering goes through llama-cpp-python's sandboxed ``Jinja2ChatFormatter``, the same code it
uses for templates found in GGUF files. A model without a template gets ChatML, and the worker
says so in its log: llama-cpp-python alone would silently fall back to the llama-2 format.
"""

from __future__ import annotations

from typing import Any

from worker.chat_jinja import Jinja2ChatFormatter

__all__ = ["BUILTIN_TEMPLATES", "ChatTemplate"]

BUILTIN_TEMPLATES = {
    "chatml": (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    ),
    "llama3": (
        "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] "
        "+ '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
        "{% endif %}"
    ),
    "gemma": (
        "{{ bos_token }}{% for message in messages %}"
        "{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
        "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
    ),
}
_ALIASES = {"llama-3": "llama3", "gemma3": "gemma", "gemma2": "gemma"}


def _text_content(message: dict[str, Any]) -> dict[str, Any]:
    """OpenAI content parts (``[{"type": "text", "text": …}]``) become plain text for templates."""
    content = message.get("content")
    if isinstance(content, list):
        text = "".join(part.get("text", "") for part in content if part.get("type") == "text")
        return {**message, "content": text}
    if content is None:
        return {**message, "content": ""}
    return message


class ChatTemplate:
    def __init__(self, name: str, source: str, *, bos_token: str, eos_token: str) -> None:
        self.name = name  # "gguf", a built-in name, or "custom"
        self.source = source
        self._formatter = Jinja2ChatFormatter(
            template=source, eos_token=eos_token, bos_token=bos_token
        )

    @classmethod
    def choose(
        cls, wanted: str | None, from_gguf: str | None, *, bos_token: str, eos_token: str
    ) -> ChatTemplate:
        tokens = {"bos_token": bos_token, "eos_token": eos_token}
        if wanted is None:
            if from_gguf is not None:
                return cls("gguf", from_gguf, **tokens)
            return cls("chatml", BUILTIN_TEMPLATES["chatml"], **tokens)
        name = _ALIASES.get(wanted, wanted)
        if name in BUILTIN_TEMPLATES:
            return cls(name, BUILTIN_TEMPLATES[name], **tokens)
        return cls("custom", wanted, **tokens)

    def render(self, messages: list[dict[str, Any]]) -> str:
        """The prompt for these messages, ending with the assistant's turn opening."""
        plain: Any = [_text_content(m) for m in messages]
        response = self._formatter(messages=plain)
        prompt: str = response.prompt
        return prompt
