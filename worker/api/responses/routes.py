"""OpenAI's Responses API (``POST /v1/responses``) over the chat pipeline.

A request is translated into a :class:`~worker.chat.request.ChatRequest` and answered by the one
chat pipeline; :class:`~worker.api.responses.shapes.ResponsesShape` words the answer.

Supported: ``input`` as a string or a list of message items (roles user, assistant, system,
developer; content a string or ``input_text``/``output_text`` parts), ``function_call`` and
``function_call_output`` items; ``instructions``, ``max_output_tokens``, ``temperature``,
``top_p``, ``stream``, function ``tools``, ``tool_choice`` (none, auto, required, or a function),
and ``text.format`` (text, json_object, json_schema, through the same grammars as
``response_format``). llama-server's own sampling fields are accepted too. Not supported (400
naming the field): ``previous_response_id`` (nothing is stored: send the whole conversation),
images, files, built-in tools (web search, file search, …) and other item types such as
``reasoning``. ``store``, ``metadata``, ``reasoning``, ``truncation`` and ``user`` are ignored.

Errors keep docs/protocol.md's error JSON (``{"error": {"code", "message", "type"}}``), the same
on every Corral route, rather than Responses' ``error`` event; the OpenAI client raises an
``APIError`` with that message, before a stream and within one.
"""

from __future__ import annotations

from typing import Any

from litestar import post
from litestar.response.base import ASGIResponse

from corral.http.errors import decode_body
from corral.http.worker_routes import RESPONSES, RESPONSES_INPUT_TOKENS
from worker.answer.answer_context import AnswerContext
from worker.answer.response_shape import ResponseShape
from worker.api.responses.protocol import ResponsesRequest
from worker.api.responses.shapes import ResponsesShape
from worker.api.responses.translate import echoed_fields, to_chat_request
from worker.chat.formats import OutputParser
from worker.chat.pipeline import count_prompt_tokens, run_chat
from worker.state import AnyRequest

__all__ = ["responses_routes"]


@post(RESPONSES.paths, status_code=200)
async def responses(request: AnyRequest) -> ASGIResponse:
    body = decode_body(await request.body(), ResponsesRequest)
    echo = echoed_fields(body)

    def shape(context: AnswerContext, parser: OutputParser) -> ResponseShape:
        return ResponsesShape(context, parser, echo)

    return await run_chat(request, to_chat_request(body), shape)


@post(RESPONSES_INPUT_TOKENS.paths, status_code=200)
async def responses_input_tokens(request: AnyRequest) -> dict[str, Any]:
    """How many prompt tokens the response would take, as llama-server counts them."""
    body = decode_body(await request.body(), ResponsesRequest)
    n_tokens = await count_prompt_tokens(request, to_chat_request(body))
    return {"input_tokens": n_tokens, "object": "response.input_tokens"}


responses_routes = [responses, responses_input_tokens]
