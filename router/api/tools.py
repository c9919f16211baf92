"""``GET /tools`` and ``POST /tools`` (docs/tools.md): list the server-side tools and run one.

The JSON is llama-server's (tools/server/README-dev.md). Every call is logged, allowed or
refused, with the caller's key id, the tool and its parameters. A tool that may write or run
programs is refused (403) to a key that is not ``admin``. A path outside ``--tools-root`` is the
tool's ``{"error": …}`` (the model can see it and try another), except in ``x-tool-cwd``, which
the client sets: a 400.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Final

import msgspec
import structlog
from litestar import Request, get, post
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, decode_body, json_response
from corral.http.streaming import SSE_HEADERS, ClosingStreamingResponse
from router.security.api_keys import KeyScope
from router.security.guard import ApiKeyAuth
from router.security.origins import runs_tools
from router.tools.confinement import OutsideRoot
from router.tools.definitions import BadToolParams, Tool, ToolCall, ToolResult
from router.tools.toolbox import ToolBox

__all__ = ["tool_routes"]

AnyRequest = Request[Any, Any, Any]

_LOGGED_PARAMS_CHARS: Final = 500
_log = structlog.get_logger("corral.tools")


class ToolRequest(msgspec.Struct, forbid_unknown_fields=False):
    tool: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    stream: bool = False


def _toolbox(request: AnyRequest) -> ToolBox:
    toolbox: ToolBox = request.app.state.tools
    if not toolbox.enabled:
        raise ApiError(403, "this feature is disabled", "feature_disabled")
    return toolbox


def _caller(request: AnyRequest) -> tuple[str | None, KeyScope]:
    auth: ApiKeyAuth = request.app.state.auth
    key = auth.identify(request.scope["headers"]) if auth.enabled else None
    # Without keys everyone is admin; with keys the middleware has already found one.
    return (key.id, key.scope) if key is not None else (None, KeyScope.ADMIN)


def _audit(
    key_id: str | None, tool: str, params: dict[str, Any], outcome: str, **extra: Any
) -> None:
    shown = msgspec.json.encode(params).decode()[:_LOGGED_PARAMS_CHARS]
    _log.info("tool call", key=key_id, tool=tool, params=shown, outcome=outcome, **extra)


@get("/tools")
async def list_tools(request: AnyRequest) -> ASGIResponse:
    return json_response([tool.listing() for tool in _toolbox(request).tools()])


def _prepare(request: AnyRequest, toolbox: ToolBox, body: ToolRequest) -> tuple[Tool, ToolCall]:
    tool = toolbox.find(body.tool)
    if tool is None:
        _audit(_caller(request)[0], body.tool, body.params, "refused: unknown tool")
        raise ApiError(404, f'unknown tool "{body.tool}"', "invalid_request_error")
    if body.stream and tool.stream is None:
        raise ApiError(
            404, f'tool "{body.tool}" does not support stream = true', "invalid_request_error"
        )
    if runtime := request.headers.get("x-tool-runtime"):
        # llama-server's --tools-runtime (containers, ssh) is not implemented: never fall back
        # to the host when an isolate was asked for.
        raise ApiError(400, f"tool runtimes are not supported: {runtime}")
    key_id, scope = _caller(request)
    if tool.write and scope is not KeyScope.ADMIN:
        _audit(key_id, tool.name, body.params, "refused: the key's scope")
        raise ApiError(403, f'only admin keys may run "{tool.name}"', "permission_error")
    # As llama-server: the working directory is the client's to set, never the model's.
    params = {k: v for k, v in body.params.items() if k not in ("cwd", "runtime", "resp_type")}
    try:
        cwd = toolbox.root.working_dir(request.headers.get("x-tool-cwd"))
    except OutsideRoot as exc:
        _audit(key_id, tool.name, params, "refused: x-tool-cwd outside the tools root")
        raise ApiError(400, f"x-tool-cwd: {exc}") from None
    as_base64 = request.headers.get("x-resp-type") == "base64"
    return tool, ToolCall(params, toolbox.root, cwd, as_base64)


async def _run(tool: Tool, call: ToolCall) -> ToolResult:
    try:
        return await tool.invoke(call)
    except OutsideRoot as exc:
        return {"error": str(exc)}
    except BadToolParams as exc:
        raise ApiError(400, f"{tool.name}: {exc}") from None


async def _stream(tool: Tool, call: ToolCall, key_id: str | None) -> AsyncIterator[bytes]:
    assert tool.stream is not None
    outcome = "ok"
    try:
        async for chunk in tool.stream(call):
            yield b"data: " + msgspec.json.encode({"chunk": chunk}) + b"\n\n"
        yield b'data: {"done":true}\n\n'
    except (BadToolParams, OutsideRoot, OSError) as exc:
        outcome = f"error: {exc}"
        yield b"data: " + msgspec.json.encode({"done": True, "error": str(exc)}) + b"\n\n"
    finally:
        _audit(key_id, tool.name, call.params, outcome, stream=True)


@post("/tools", status_code=200, opt=runs_tools())
async def call_tool(request: AnyRequest) -> ASGIResponse:
    toolbox = _toolbox(request)
    body = decode_body(await request.body(), ToolRequest)
    tool, call = _prepare(request, toolbox, body)
    key_id, _ = _caller(request)
    if body.stream:
        return ClosingStreamingResponse(
            iterator=_stream(tool, call, key_id),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )
    started = time.monotonic()
    try:
        result = await _run(tool, call)
    except ApiError as exc:
        _audit(key_id, tool.name, call.params, f"bad request: {exc.message}")
        raise
    outcome = f"error: {result['error']}" if "error" in result else "ok"
    _audit(key_id, tool.name, call.params, outcome, seconds=round(time.monotonic() - started, 3))
    return json_response(result)


tool_routes = [list_tools, call_tool]
