"""What a tool is to the router: its ``GET /tools`` entry, and one call's parameters.

The shapes are llama-server's (tools/server/README-dev.md, ``/tools``): an entry has ``tool``,
``display_name``, ``type`` (``server`` or ``mcp``), ``permissions.write``, ``uses_cwd`` and the
OpenAI ``definition``; a result is ``{"plain_text_response": …}``, a JSON object, or
``{"error": "…"}`` for a tool that ran and failed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar

from router.tools.confinement import ToolsRoot

__all__ = [
    "TOOL_THREADS",
    "BadToolParams",
    "Tool",
    "ToolCall",
    "ToolResult",
    "function_definition",
    "optional_bool",
    "optional_int",
    "optional_str",
    "required_str",
    "threaded",
]

ToolResult = dict[str, Any]

# Threads the blocking tools may hold at once, all callers together. Their own limit, not
# anyio's default one (40 threads), which the router's other blocking work shares: model header
# reads for listings and loads, /api/show. A grep may run 15 s, so 40 of them would stall those.
TOOL_THREADS: Final = 8
# One limiter per event loop, as anyio keeps its default one.
_TOOL_LIMITER: RunVar[CapacityLimiter] = RunVar("corral_tool_threads")


class BadToolParams(Exception):
    """A parameter missing or of the wrong type: the caller's mistake, a 400."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    params: dict[str, Any]
    root: ToolsRoot
    cwd: Path  # the call's working directory, already confined to the root
    # ``x-resp-type: base64`` (read_file only): the client's choice, never the model's.
    base64: bool = False

    def path(self, name: str = "path") -> Path:
        """The parameter as a confined path (raises ``OutsideRoot``)."""
        given = required_str(self.params, name)
        if "\0" in given:  # no file has one, and the OS refuses it (a ValueError, not a 500)
            raise BadToolParams(f'"{name}" must not contain a NUL character')
        return self.root.resolve(given, self.cwd)


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    display_name: str
    description: str
    parameters: dict[str, Any]
    invoke: Callable[[ToolCall], Awaitable[ToolResult]]
    write: bool = False  # may change files or run programs: admin keys only (docs/tools.md)
    kind: Literal["server", "mcp"] = "server"
    # Streamed output (``"stream": true``): chunks of text, then the end.
    stream: Callable[[ToolCall], AsyncIterator[str]] | None = field(default=None)

    def definition(self) -> dict[str, Any]:
        return function_definition(self.name, self.description, self.parameters)

    def listing(self) -> dict[str, Any]:
        return {
            "display_name": self.display_name,
            "tool": self.name,
            "type": self.kind,
            "permissions": {"write": self.write},
            "uses_cwd": self.kind == "server",
            "definition": self.definition(),
        }


def function_definition(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def _typed(params: dict[str, Any], name: str, default: object, kind: type, what: str) -> Any:
    value = params.get(name, default)
    # bool is an int to Python, never to a JSON schema.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BadToolParams(f'"{name}" must be {what}')
    return value


def required_str(params: dict[str, Any], name: str) -> str:
    return str(_typed(params, name, None, str, "a string"))


def optional_str(params: dict[str, Any], name: str, default: str) -> str:
    return str(_typed(params, name, default, str, "a string"))


def optional_int(params: dict[str, Any], name: str, default: int) -> int:
    return int(_typed(params, name, default, int, "an integer"))


def optional_bool(params: dict[str, Any], name: str, default: bool) -> bool:
    return bool(_typed(params, name, default, bool, "a boolean"))


def _tool_limiter() -> CapacityLimiter:
    try:
        return _TOOL_LIMITER.get()
    except LookupError:
        limiter = CapacityLimiter(TOOL_THREADS)
        _TOOL_LIMITER.set(limiter)
        return limiter


def threaded(run: Callable[[ToolCall], ToolResult]) -> Callable[[ToolCall], Awaitable[ToolResult]]:
    """A blocking tool (file reads, directory walks) run off the event loop, at most
    :data:`TOOL_THREADS` at once; further calls wait for one to end."""

    async def invoke(call: ToolCall) -> ToolResult:
        return await anyio.to_thread.run_sync(run, call, limiter=_tool_limiter())

    return invoke
