"""Which chat template a model uses, and the one call that renders a conversation with it.

As llama-server (``common_chat_templates_init``): ``--chat-template``/``--chat-template-file``
beat the GGUF's own template; a GGUF's ``tool_use`` template is used for requests with tools;
no template at all (or ``chatml``) means llama.cpp's ChatML. ``--no-jinja`` renders through
llama.cpp's built-in C++ templates instead, which know no tools.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from worker.templates.builtin import BuiltinTemplate, canonical_name
from worker.templates.capabilities import TemplateCaps
from worker.templates.renderer import (
    JinjaTemplate,
    RenderRequest,
    TemplateRenderError,
    VocabTokens,
)

__all__ = ["CHATML_TEMPLATE", "ChatTemplates", "TemplateChoice"]

# llama.cpp's CHATML_TEMPLATE_SRC (common/chat.cpp), byte for byte.
CHATML_TEMPLATE = (
    "{%- for message in messages -%}\n"
    "  {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "  {{- '<|im_start|>assistant\n' -}}\n"
    "{%- endif -%}"
)


# Tags and special tokens: <think>, </think>, <|think|>, [THINK].
_MARKUP = re.compile(r"<[^<>\s]{1,40}>|\[[A-Z_/]{2,40}\]")


@dataclass(frozen=True, slots=True)
class TemplateChoice:
    """The settings and GGUF metadata that pick a template."""

    use_jinja: bool = True
    override: str | None = None  # --chat-template NAME|TEXT, or --chat-template-file's text
    gguf_default: str | None = None
    gguf_tool_use: str | None = None


def _thinking_probe(template: JinjaTemplate) -> bool:
    """Whether ``enable_thinking`` switches thinking markup in the prompt (``<think>``,
    ``<|think|>``…): then llama-server's analysis finds a reasoning format and turns it on.
    A switch of plain words (Apertus' "Deliberation: enabled") does not count, as there."""
    hello = [{"role": "user", "content": "test"}]  # the question llama.cpp's analysis asks
    try:
        on = template.render(RenderRequest(hello, enable_thinking=True))
        off = template.render(RenderRequest(hello, enable_thinking=False))
    except TemplateRenderError:
        return False
    # Anywhere in the prompt, or in the opening of the answer alone (SmolLM 3 names <think>
    # in its instructions when on, and opens an empty <think></think> answer when off).
    tails = [text[text.rfind("test") :] for text in (on, off)]
    return any(
        sorted(_MARKUP.findall(a)) != sorted(_MARKUP.findall(b)) for a, b in ((on, off), tails)
    )


class ChatTemplates:
    """A model's chat template(s): Jinja as llama-server renders them, or a built-in."""

    def __init__(
        self,
        choice: TemplateChoice,
        tokens: VocabTokens,
        kwargs: dict[str, Any] | None = None,
        now: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        # llama-server's default kwargs: preserve_reasoning unless --chat-template-kwargs says.
        self.kwargs: dict[str, Any] = {"preserve_reasoning": True, **(kwargs or {})}
        self.tokens = tokens
        self.builtin: BuiltinTemplate | None = None
        self.jinja = choice.use_jinja
        self.tool_use: JinjaTemplate | None = None
        source = choice.override if choice.override is not None else choice.gguf_default
        self.name = "custom" if choice.override is not None else "gguf"
        builtin_name = canonical_name(source) if source is not None else None
        if not choice.use_jinja or (builtin_name is not None and builtin_name != "chatml"):
            self.builtin = BuiltinTemplate(builtin_name or source or "chatml")
            # One llama.cpp does not recognise fails each request, not the load, as there.
            self.name = builtin_name or self.name
            self.source = self.builtin.source
            self.caps = TemplateCaps(supports_tools=False, supports_tool_calls=False,
                                     supports_parallel_tool_calls=False)  # fmt: skip
            self.supports_thinking = False
            return
        tool_use = choice.gguf_tool_use if choice.override is None else None
        if not source or source == "chatml":
            source, self.name = tool_use or CHATML_TEMPLATE, "chatml" if not tool_use else "gguf"
        extra: dict[str, Any] = {} if now is None else {"now": now}
        self.default = JinjaTemplate(source, tokens, **extra)
        if tool_use:
            try:
                self.tool_use = JinjaTemplate(tool_use, tokens, **extra)
            except TemplateRenderError:  # llama-server ignores a tool_use template that fails
                self.tool_use = None
        self.source = self.default.source
        # llama-server reports the tool_use template's capabilities when there is one.
        self.caps = (self.tool_use or self.default).caps
        self.supports_thinking = _thinking_probe(self.default)

    def request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        kwargs: dict[str, Any] | None = None,
        add_generation_prompt: bool = True,
    ) -> RenderRequest:
        """What to render for a request: its kwargs over the server's, and ``enable_thinking``
        on when the template thinks unless the kwargs say otherwise (``oaicompat_chat_params_
        parse``)."""
        merged = {**self.kwargs, **(kwargs or {})}
        thinking = merged.get("enable_thinking")
        if isinstance(thinking, str):
            raise TemplateRenderError(
                'invalid type for "enable_thinking" (expected boolean, got string)'
            )
        return RenderRequest(
            messages=messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            kwargs=merged,
            enable_thinking=thinking if isinstance(thinking, bool) else self.supports_thinking,
        )

    def render(self, request: RenderRequest) -> str:
        """The prompt for ``request``; :class:`TemplateRenderError` says why it cannot be."""
        if self.builtin is not None:
            if request.tools and not self.jinja:  # a built-in name with --jinja ignores them
                raise TemplateRenderError("tools param requires --jinja flag")
            prompt = self.builtin.render(request.messages, request.add_generation_prompt)
            if prompt is None:
                raise TemplateRenderError(
                    "this custom template is not supported, try using --jinja"
                )
            return prompt
        template = self.tool_use if request.tools and self.tool_use is not None else self.default
        return template.render(request)

    def generation_prompt(self, request: RenderRequest) -> str:
        """What the generation prompt adds at the end (``<|im_start|>assistant\n<think>\n``):
        the prompt past where it and the prompt without it part, as llama.cpp computes it
        (``common_chat_template_generation_prompt``) for its output parsers."""
        with_it = self.render(dataclasses.replace(request, add_generation_prompt=True))
        without = self.render(dataclasses.replace(request, add_generation_prompt=False))
        shared = next(
            (i for i, (a, b) in enumerate(zip(with_it, without, strict=False)) if a != b),
            min(len(with_it), len(without)),
        )
        return with_it[shared:]

    def props(self) -> dict[str, Any]:
        """The template fields of ``/props``, as llama-server reports them."""
        fields: dict[str, Any] = {
            "chat_template": self.source,
            "chat_template_caps": self.props_caps(),
            "bos_token": self.tokens.bos_token,
            "eos_token": self.tokens.eos_token,
        }
        if self.tool_use is not None:
            fields["chat_template_tool_use"] = self.tool_use.source
        return fields

    def props_caps(self) -> dict[str, bool]:
        """``chat_template_caps`` of ``/props``, as llama-server reports them."""
        return self.caps.as_dict()
