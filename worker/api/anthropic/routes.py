"""Anthropic's Messages routes (``/v1/messages``, ``/v1/messages/count_tokens``).

A request is translated into a :class:`~worker.chat.request.ChatRequest` and answered by the one
chat pipeline; :class:`~worker.api.anthropic.shapes.MessagesShape` words the answer the Anthropic
way.

Supported (docs/api.md): ``system`` (string or text blocks); ``messages`` with ``text``,
``image``, ``tool_use``, ``tool_result`` (text and images) and ``thinking`` blocks;
``max_tokens``, ``stop_sequences``, ``temperature``, ``top_p``, ``top_k``, ``stream``,
``thinking`` (its budget); custom ``tools`` and every ``tool_choice`` type (by Corral's
constrained JSON tool mode, :mod:`worker.chat.json_tools`). llama-server's own sampling fields
(``ignore_eos``, ``cache_prompt``, ``seed``, ``min_p``, …) are accepted as well, as upstream
does. Not supported (400 naming the field): document blocks, server tools (``web_search``, …).
``metadata`` and ``cache_control`` are ignored; the model's own thinking comes back as
``thinking`` blocks (docs/tool-calls.md).

Errors keep docs/protocol.md's error JSON (``{"error": {"code", "message", "type"}}``), the same
on every Corral route, rather than Anthropic's ``{"type": "error", "error": {…}}``; a failure
after a stream has started arrives as that JSON in an unnamed ``data:`` event, as on every
Corral stream.
"""

from __future__ import annotations

from litestar import post
from litestar.response.base import ASGIResponse

from corral.http.errors import decode_body, json_response
from corral.http.worker_routes import COUNT_TOKENS, MESSAGES
from worker.api.anthropic.protocol import CountTokensRequest, MessagesRequest
from worker.api.anthropic.shapes import MessagesShape
from worker.api.anthropic.translate import to_chat_request
from worker.chat.pipeline import count_prompt_tokens, run_chat
from worker.state import AnyRequest

__all__ = ["anthropic_routes"]


@post(MESSAGES.paths, status_code=200)
async def messages(request: AnyRequest) -> ASGIResponse:
    body = decode_body(await request.body(), MessagesRequest)
    return await run_chat(request, to_chat_request(body), MessagesShape)


@post(COUNT_TOKENS.paths, status_code=200)
async def count_tokens(request: AnyRequest) -> ASGIResponse:
    body = decode_body(await request.body(), CountTokensRequest)
    return json_response(
        {"input_tokens": await count_prompt_tokens(request, to_chat_request(body))}
    )


anthropic_routes = [messages, count_tokens]
