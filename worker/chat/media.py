"""A chat's images and audio: read from its messages, rendered and tokenized with markers."""

from __future__ import annotations

from typing import Any

from corral.http.errors import ApiError
from worker.engine.engine import Engine
from worker.engine.model import LoadedModel
from worker.media.content import MediaFile, take_message_media
from worker.media.projector import MediaPrompt, media_marker
from worker.templates import TemplateRenderError

__all__ = ["chat_media_prompt"]


async def chat_media_prompt(
    engine: Engine,
    model: LoadedModel,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    kwargs: dict[str, Any] | None,
) -> MediaPrompt | None:
    """The conversation tokenized with its media, or None when it has none (400 for media the
    model cannot read). ``messages`` are rendered as the chat template renders text."""
    marked, files = await take_message_media(
        messages, model.modalities, media_marker(), model.settings.media_rules
    )
    if not files:
        return None

    def tokenize() -> MediaPrompt:
        try:
            text = model.template.render(model.template.request(marked, tools, kwargs))
        except TemplateRenderError as exc:
            raise ApiError(400, f"cannot apply the chat template: {exc}") from None
        return _tokenize(model, text, files)

    return await engine.call(tokenize)


def _tokenize(model: LoadedModel, text: str, files: list[MediaFile]) -> MediaPrompt:
    projector = model.projector
    assert projector is not None  # take_message_media refused media without one
    # As chat_prompt: the rendered text has lost the template's BOS, tokenizing adds it back.
    return projector.tokenize(text, files, add_special=True)
