"""Ollama's chat and generate requests as the worker's own: OpenAI's chat or completions body,
or llama-server's ``/infill`` for a ``suffix``. The generation is the same one every other API
gets: the same sampling fields, tool-call parsing, reasoning split and grammars.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from corral.http.errors import ApiError
from corral.options.sampling_fields import SAMPLING_FIELDS
from router.api.ollama.go_template import render_go_template
from router.api.ollama.protocol import ChatRequest, GenerateRequest, Message, Options

__all__ = ["WorkerCall", "chat_call", "generate_call"]

_encode = msgspec.json.Encoder().encode
_CHAT, _COMPLETIONS, _INFILL = b"/v1/chat/completions", b"/v1/completions", b"/infill"
# Ollama's options that are sampling fields: Ollama's name → the worker's request field.
_SAMPLING = {row.ollama: row.request for row in SAMPLING_FIELDS if row.ollama}


@dataclass(frozen=True, slots=True)
class WorkerCall:
    """Where the worker is asked, and with what body."""

    target: bytes
    body: bytes


def _sampling(options: Options | None) -> dict[str, Any]:
    if options is None:
        return {}
    fields = {request: getattr(options, name) for name, request in _SAMPLING.items()}
    fields = {name: value for name, value in fields.items() if value is not None}
    if options.stop is not None:
        fields["stop"] = options.stop
    # -1 is "no limit" and -2 "fill the context" in Ollama: the worker's default either way.
    if options.num_predict is not None and options.num_predict >= 0:
        fields["n_predict"] = options.num_predict
    if options.num_keep is not None:
        fields["n_keep"] = options.num_keep
    return fields


def _streaming(stream: bool) -> dict[str, Any]:
    # The usage chunk carries the counters (and llama-server's timings) of the last object.
    return {"stream": True, "stream_options": {"include_usage": True}} if stream else {}


def _format(value: str | dict[str, Any] | None) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if value == "json":
        return {"response_format": {"type": "json_object"}}
    if isinstance(value, dict):
        schema = {"name": "format", "schema": value}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}
    raise ApiError(400, f'invalid format: "{value}", expected "json" or a JSON schema')


def _native_format(value: str | dict[str, Any] | None) -> dict[str, Any]:
    """``format`` for llama-server's native API, which takes a schema as ``json_schema``."""
    response_format = _format(value).get("response_format")
    if response_format is None:
        return {}
    schema = response_format.get("json_schema", {}).get("schema", {"type": "object"})
    return {"json_schema": schema}


def _think(value: bool | str | None) -> dict[str, Any]:
    """``think``: the template's switch (``enable_thinking``), and a level for templates that
    take one (``reasoning_effort``: "low", "medium", "high")."""
    if value is None:
        return {}
    if isinstance(value, str):
        if value not in ("low", "medium", "high"):
            raise ApiError(400, f'invalid think value: "{value}" (want true, false or a level)')
        return {"chat_template_kwargs": {"enable_thinking": True, "reasoning_effort": value}}
    return {"chat_template_kwargs": {"enable_thinking": value}}


def _image_parts(images: list[str]) -> list[dict[str, Any]]:
    # The worker reads the bytes, whatever their kind; it checks the base64 (a 400 if bad).
    return [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}}
        for image in images
    ]


def _message(message: Message, index: int) -> dict[str, Any]:
    content: str | list[dict[str, Any]] = message.content
    if message.images:
        content = [{"type": "text", "text": message.content}, *_image_parts(message.images)]
    value: dict[str, Any] = {"role": message.role, "content": content}
    if message.thinking:
        value["reasoning_content"] = message.thinking
    if message.tool_calls:
        value["tool_calls"] = [
            {
                "id": f"call_{index}_{n}",
                "type": "function",
                "function": {
                    "name": call.function.name,
                    "arguments": json.dumps(call.function.arguments),
                },
            }
            for n, call in enumerate(message.tool_calls)
        ]
    if message.tool_name:
        value["name"] = message.tool_name
    return value


def chat_call(request: ChatRequest, model: str) -> WorkerCall:
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message(message, n) for n, message in enumerate(request.messages)],
        **_sampling(request.options),
        **_streaming(request.stream),
        **_format(request.format),
        **_think(request.think),
    }
    if request.tools:
        body["tools"] = request.tools
    return WorkerCall(_CHAT, _encode(body))


def generate_call(request: GenerateRequest, model: str) -> WorkerCall:
    """``raw`` and ``template`` prompts go as they are (completions), a ``suffix`` to
    ``/infill``, anything else through the model's chat template as one user turn."""
    sampling = {"model": model, **_sampling(request.options)}
    if request.suffix:
        body = {
            **sampling,
            "input_prefix": request.prompt,
            "input_suffix": request.suffix,
            "stream": request.stream,
            **_native_format(request.format),
        }
        return WorkerCall(_INFILL, _encode(body))
    if request.raw or request.template:
        if request.images:
            raise ApiError(400, "images need the model's chat template: not with raw or template")
        prompt = request.prompt
        if request.template and not request.raw:
            prompt = render_go_template(request.template, request.system or "", request.prompt)
        body = {**sampling, "prompt": prompt, **_streaming(request.stream)}
        return WorkerCall(_COMPLETIONS, _encode({**body, **_native_format(request.format)}))
    user = Message(role="user", content=request.prompt, images=request.images)
    system = [Message(role="system", content=request.system)] if request.system else []
    chat = ChatRequest(
        model=request.model,
        messages=[*system, user],
        stream=request.stream,
        format=request.format,
        options=request.options,
        think=request.think,
    )
    return chat_call(chat, model)
