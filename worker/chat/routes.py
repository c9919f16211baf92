"""``POST /v1/chat/completions``: the request is already the chat pipeline's own."""

from __future__ import annotations

from litestar import post
from litestar.response.base import ASGIResponse

from corral.errors import decode_body
from worker.chat.shapes import ChatShape
from worker.chat_pipeline import run_chat
from worker.chat_request import ChatRequest
from worker.state import AnyRequest

__all__ = ["chat_routes"]


@post(["/v1/chat/completions", "/chat/completions"], status_code=200)
async def chat_completions(request: AnyRequest) -> ASGIResponse:
    return await run_chat(request, decode_body(await request.body(), ChatRequest), ChatShape)


chat_routes = [chat_completions]
