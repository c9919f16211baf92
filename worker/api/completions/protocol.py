"""Request bodies of the raw-prompt routes: OpenAI's ``/v1/completions``, llama-server's
``/completion`` and ``/infill`` (docs/protocol.md §6)."""

from __future__ import annotations

from typing import Any

import msgspec

from worker.answer.sampling_fields import SamplingFields, TokenBudget

__all__ = [
    "CompletionRequest",
    "InfillChunk",
    "InfillRequest",
    "MultimodalPrompt",
    "NativeCompletionRequest",
]


class MultimodalPrompt(msgspec.Struct):
    """llama-server's prompt object: text with one media marker per ``multimodal_data`` entry
    (base64 images or audio, in order)."""

    prompt_string: str
    multimodal_data: list[str] = msgspec.field(default_factory=list)


class CompletionRequest(SamplingFields, kw_only=True):
    """OpenAI ``/v1/completions``."""

    # Any of llama-server's prompt shapes (worker.engine.prompt_inputs), told apart there.
    prompt: str | list[Any] | dict[str, Any]
    max_tokens: TokenBudget | None = None
    n_predict: TokenBudget | None = None
    echo: bool = False


class NativeCompletionRequest(SamplingFields, kw_only=True):
    """llama-server's own ``/completion``."""

    prompt: str | list[Any] | dict[str, Any]
    n_predict: TokenBudget | None = None
    max_tokens: TokenBudget | None = None
    return_tokens: bool = False  # the generated token ids in the answer's `tokens`
    response_fields: list[str] = msgspec.field(default_factory=list)  # only these, by a/b path


class InfillChunk(msgspec.Struct):
    text: str  # required, as llama-server requires it: a chunk without text is a 400
    filename: str = "tmp"


class InfillRequest(SamplingFields, kw_only=True):
    """llama-server's ``/infill``: fill in between a prefix and a suffix (code models)."""

    input_prefix: str = ""
    input_suffix: str = ""
    input_extra: list[InfillChunk] = msgspec.field(default_factory=list)
    prompt: str = ""
    n_predict: TokenBudget | None = None
    max_tokens: TokenBudget | None = None
