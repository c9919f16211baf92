"""``POST /v1/chat/completions``: the request is already the chat pipeline's own."""

from __future__ import annotations

from typing import Any

from litestar import post
from litestar.response.base import ASGIResponse

from corral.http.errors import decode_body
from corral.http.worker_routes import CHAT, CHAT_INPUT_TOKENS
from worker.api.chat.shapes import ChatShape
from worker.chat.pipeline import count_prompt_tokens, run_chat
from worker.chat.request import ChatRequest
from worker.state import AnyRequest

__all__ = ["chat_routes"]


@post(CHAT.paths, status_code=200)
async def chat_completions(request: AnyRequest) -> ASGIResponse:
    return await run_chat(request, decode_body(await request.body(), ChatRequest), ChatShape)


@post(CHAT_INPUT_TOKENS.paths, status_code=200)
async def chat_input_tokens(request: AnyRequest) -> dict[str, Any]:
    """How many prompt tokens the chat would take, as llama-server counts them."""
    body = decode_body(await request.body(), ChatRequest)
    n_tokens = await count_prompt_tokens(request, body)
    return {"input_tokens": n_tokens, "object": "response.input_tokens"}


chat_routes = [chat_completions, chat_input_tokens]
