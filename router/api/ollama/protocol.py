"""Ollama's request bodies (docs/api.md in ollama/ollama), as msgspec Structs.

Unknown fields are ignored, as Ollama's Go decoder ignores them; a field of the wrong type is a
400 naming it. ``options`` lists what Corral's generation reads; Ollama's load-time options
(``num_ctx``, ``num_gpu``, ``num_thread``, …) are accepted and ignored: they are a model's
settings in Corral (its preset section), not a request's (docs/migrating.md).
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "ChatRequest",
    "CopyRequest",
    "DeleteRequest",
    "EmbedRequest",
    "EmbeddingsRequest",
    "GenerateRequest",
    "KeepAlive",
    "Message",
    "ModelRequest",
    "Options",
    "PullRequest",
    "ShowRequest",
    "ToolCall",
    "ToolCallFunction",
]

# Seconds as a number, or a Go duration ("5m", "1h30m", "-1"); see router/api/ollama/keep_alive.
KeepAlive = float | str


class Options(msgspec.Struct, kw_only=True):
    """The sampling fields whose Ollama name corral/options/sampling_fields.py gives (tested), and
    the budget and stop strings."""

    num_predict: int | None = None
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    typical_p: float | None = None
    repeat_penalty: float | None = None
    repeat_last_n: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    num_keep: int | None = None


class ToolCallFunction(msgspec.Struct, kw_only=True):
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


class ToolCall(msgspec.Struct, kw_only=True):
    function: ToolCallFunction


class Message(msgspec.Struct, kw_only=True):
    role: str
    content: str = ""
    thinking: str | None = None
    images: list[str] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_name: str | None = None


class _Generation(msgspec.Struct, kw_only=True):
    model: str
    stream: bool = True
    format: str | dict[str, Any] | None = None
    options: Options | None = None
    keep_alive: KeepAlive | None = None
    think: bool | str | None = None


class ChatRequest(_Generation, kw_only=True):
    messages: list[Message] = msgspec.field(default_factory=list)
    tools: list[dict[str, Any]] | None = None


class GenerateRequest(_Generation, kw_only=True):
    prompt: str = ""
    suffix: str | None = None
    system: str | None = None
    template: str | None = None
    raw: bool = False
    images: list[str] | None = None


class EmbedRequest(msgspec.Struct, kw_only=True):
    model: str
    input: str | list[str] = ""
    truncate: bool = True
    options: Options | None = None
    keep_alive: KeepAlive | None = None
    dimensions: int | None = None


class EmbeddingsRequest(msgspec.Struct, kw_only=True):
    model: str
    prompt: str = ""
    options: Options | None = None
    keep_alive: KeepAlive | None = None


class ModelRequest(msgspec.Struct, kw_only=True):
    """A body that names one model: Ollama's clients send ``model``, older ones ``name``."""

    model: str = ""
    name: str = ""

    def named(self) -> str:
        return self.model or self.name


class ShowRequest(ModelRequest, kw_only=True):
    verbose: bool = False


class DeleteRequest(ModelRequest, kw_only=True):
    pass


class PullRequest(ModelRequest, kw_only=True):
    stream: bool = True
    insecure: bool = False


class CopyRequest(msgspec.Struct, kw_only=True):
    source: str
    destination: str
