"""A raw request's prompts: any of llama-server's prompt shapes
(:mod:`worker.engine.prompt_inputs`),
or one ``{prompt_string, multimodal_data}`` object whose media the projector reads."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from corral.http.errors import ApiError
from worker.api.completions.protocol import MultimodalPrompt
from worker.engine.engine import Engine
from worker.engine.model import LoadedModel
from worker.engine.prompt_inputs import PromptError, tokenize_prompts
from worker.media.content import take_prompt_media
from worker.media.projector import MediaPrompt

__all__ = ["CompletionPrompt", "completion_prompts"]


class CompletionPrompt(NamedTuple):
    tokens: list[int]
    media: MediaPrompt | None = None
    text: str | None = None  # a media prompt as written: its media tokens have no text


async def completion_prompts(
    engine: Engine, model: LoadedModel, prompt: Any
) -> list[CompletionPrompt]:
    """Every prompt of the request (400 for a shape llama-server refuses, media the model
    cannot read or a marker count that does not match)."""
    if isinstance(prompt, dict) and prompt.get("multimodal_data"):
        try:
            multimodal = msgspec.convert(prompt, MultimodalPrompt)
        except msgspec.ValidationError as exc:
            raise ApiError(400, f"prompt: {exc}") from None
        return [await _media_prompt(engine, model, multimodal)]
    if isinstance(prompt, dict) and model.projector is not None:
        # No media given to a model that reads them: the text alone, as llama-server.
        prompt = {key: value for key, value in prompt.items() if key != "multimodal_data"}
    try:
        prompts = await engine.call(lambda: tokenize_prompts(prompt, model.prompt_tokenizer()))
    except PromptError as exc:
        raise ApiError(400, str(exc)) from None
    return [CompletionPrompt(tokens) for tokens in prompts]


async def _media_prompt(
    engine: Engine, model: LoadedModel, prompt: MultimodalPrompt
) -> CompletionPrompt:
    files = take_prompt_media(prompt.multimodal_data, model.modalities, model.settings.media_rules)

    def tokenize() -> MediaPrompt:
        projector = model.projector
        assert projector is not None  # take_prompt_media refused media without one
        return projector.tokenize(prompt.prompt_string, files, add_special=True)

    media = await engine.call(tokenize)
    return CompletionPrompt(media.tokens, media, prompt.prompt_string)
