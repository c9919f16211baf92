"""What a response shape is told about its request and model, once, as it is built.

Every :class:`~worker.answer.response_shape.ResponseShape` gets an :class:`AnswerContext` in its
constructor and reads it, never anything assigned to it later: the one answer pipeline
(:mod:`worker.answer.pipeline`) gives each of a request's completions its own copy, differing
only in what differs between them (docs/api.md, "Several completions").
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AnswerContext", "RenderedPrompt"]


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """The prompt as llama-server reports it: as text, with the settings it runs with.

    llama-server's own ``/completion`` body shows them, and OpenAI answers repeat that body as
    ``__verbose`` when asked (docs/api.md, ``verbose``).
    """

    text: str
    settings: dict[str, Any]  # generation_settings


@dataclass(frozen=True, slots=True)
class AnswerContext:
    """One completion's facts, fixed before its first event is worded."""

    model: str  # the name answers carry: the model's alias
    # One answer's identity, shared by all its completions: each API spells its id from these
    # hex digits (a prefix, maybe fewer digits), and its creation time.
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created: int = field(default_factory=lambda: int(time.time()))
    index: int = 0  # which of the request's completions this one is (n, several prompts)
    # How many completions share the response: a stream's one closing marker (OpenAI's
    # [DONE]) then follows them all rather than each.
    choices: int = 1
    # Anthropic's stream announces it in its first event, long before the counts of Finished.
    prompt_tokens: int = 0
    include_usage: bool = False  # OpenAI's stream_options: the usage in a chunk of its own
    # llama-server's own body shows it; an OpenAI answer carries it (``__verbose``) when set.
    rendered: RenderedPrompt | None = None
