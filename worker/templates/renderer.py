"""A Jinja chat template rendered into a prompt exactly as llama-server renders it.

The template context is llama.cpp's (``common_chat_template_direct_apply_impl``): the
rewritten messages, ``tools`` only when there are some (undefined otherwise, never None),
``bos_token``/``eos_token``, ``enable_thinking``, ``add_generation_prompt`` only when true,
``datetime``/``date_string`` and ``strftime_now`` for today, then the chat template kwargs
(``--chat-template-kwargs`` merged with the request's). The template's leading BOS text and
trailing EOS text are cut off when the vocabulary adds those tokens itself, so the tokenizer
puts BOS in exactly once (docs/templates.md).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jinja2

from worker.templates import families
from worker.templates.capabilities import PRESERVE_ON, TemplateCaps, probe_caps
from worker.templates.conversation import template_messages, template_tools
from worker.templates.jinja_engine import compile_template

__all__ = ["JinjaTemplate", "RenderRequest", "TemplateRenderError", "VocabTokens"]


class TemplateRenderError(ValueError):
    """The template cannot render this conversation; the message says why."""


@dataclass(frozen=True, slots=True)
class RenderRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = True
    # JSON values by name: ``--chat-template-kwargs`` with the request's on top.
    kwargs: dict[str, Any] = field(default_factory=dict)
    enable_thinking: bool = True


@dataclass(frozen=True, slots=True)
class VocabTokens:
    """What the vocabulary says about BOS/EOS: their text, and whether tokenizing adds them."""

    bos_token: str
    eos_token: str
    add_bos: bool
    add_eos: bool


def _local_now() -> datetime.datetime:
    return datetime.datetime.now().astimezone()


class JinjaTemplate:
    """One Jinja chat template with the model's BOS/EOS text and whether its vocab adds them."""

    def __init__(
        self,
        source: str,
        vocab: VocabTokens,
        now: Callable[[], datetime.datetime] = _local_now,
    ) -> None:
        self.source = families.patch_source(source)
        self.bos_token, self.eos_token = vocab.bos_token, vocab.eos_token
        self.add_bos, self.add_eos = vocab.add_bos, vocab.add_eos
        self._now = now
        try:
            self._render = compile_template(self.source, now)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateRenderError(f"the chat template does not parse: {exc}") from None
        self.caps: TemplateCaps = probe_caps(self.source)

    def _context(self, request: RenderRequest) -> dict[str, Any]:
        messages = template_messages(request.messages, self.source, self.caps)
        messages = families.rewrite_messages(messages, self.source)
        now = self._now()
        context: dict[str, Any] = {
            "messages": messages,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            "enable_thinking": request.enable_thinking,
        }
        tools = template_tools(request.tools)
        if tools is not None:
            context["tools"] = tools
        context["datetime"] = now.strftime("%b %d %Y")
        context["date_string"] = now.strftime("%d %b %Y")
        context.update(request.kwargs)
        if request.add_generation_prompt:
            context["add_generation_prompt"] = True
        preserve = context.get("preserve_reasoning")
        if isinstance(preserve, bool):
            settings = {k: preserve == v for k, v in PRESERVE_ON.items()}
            context = {**settings, **context}
        effort = context.get("reasoning_effort")
        if isinstance(effort, str) and effort:
            context.setdefault("reasoning_strength", effort)
        return context

    def render(self, request: RenderRequest) -> str:
        """The prompt text; :class:`TemplateRenderError` when it cannot be rendered."""
        try:
            prompt = self._render(self._context(request))
        # ConversationError, the template's own raise_exception, or a type error inside it.
        except Exception as exc:
            raise TemplateRenderError(str(exc)) from None
        if self.add_bos and self.bos_token and prompt.startswith(self.bos_token):
            prompt = prompt[len(self.bos_token) :]
        if self.add_eos and self.eos_token and prompt.endswith(self.eos_token):
            prompt = prompt[: -len(self.eos_token)]
        return families.finish_prompt(prompt, self.source, request.add_generation_prompt)
