"""A raw prompt that may carry media: llama-server's ``{prompt_string, multimodal_data}``."""

from __future__ import annotations

from worker.completions.protocol import MultimodalPrompt
from worker.engine import Engine
from worker.media.content import take_prompt_media
from worker.media.projector import MediaPrompt
from worker.model import LoadedModel

__all__ = ["completion_prompt"]


async def completion_prompt(
    engine: Engine, model: LoadedModel, prompt: str | list[int] | MultimodalPrompt
) -> tuple[list[int], MediaPrompt | None]:
    """The prompt's tokens, and its media when it has some (400 for media the model cannot
    read or a marker count that does not match)."""
    if not isinstance(prompt, MultimodalPrompt):
        return await engine.call(lambda: model.text_prompt(prompt)), None
    text = prompt.prompt_string
    if not prompt.multimodal_data:
        return await engine.call(lambda: model.text_prompt(text)), None
    files = take_prompt_media(prompt.multimodal_data, model.modalities)

    def tokenize() -> MediaPrompt:
        projector = model.projector
        assert projector is not None  # take_prompt_media refused media without one
        return projector.tokenize(text, files, add_special=True)

    media = await engine.call(tokenize)
    return media.tokens, media
