"""Request bodies of the model-information routes (tokens and templates)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from worker.chat.request import ChatMessage

__all__ = ["ApplyTemplateRequest", "DetokenizeRequest", "TokenizeRequest"]


class TokenizeRequest(msgspec.Struct, kw_only=True):
    content: str
    add_special: bool = False
    parse_special: bool = True
    with_pieces: bool = False


class DetokenizeRequest(msgspec.Struct, kw_only=True):
    tokens: list[Annotated[int, Meta(ge=0)]]


class ApplyTemplateRequest(msgspec.Struct, kw_only=True):
    messages: list[ChatMessage]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None  # required/none change the generic mode's
    chat_template_kwargs: dict[str, Any] | None = None
    add_generation_prompt: bool = True
