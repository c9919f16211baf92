"""``read_file``, ``write_file`` and ``edit_file`` (shapes and limits as llama-server's).

Every path goes through :class:`~router.tools.confinement.ToolsRoot` first (``ToolCall.path``).
"""

from __future__ import annotations

import base64
from typing import Any, BinaryIO, Final

from router.tools.bounded_reads import LineReader, open_regular_file
from router.tools.definitions import (
    BadToolParams,
    Tool,
    ToolCall,
    ToolResult,
    optional_bool,
    optional_int,
    required_str,
    threaded,
)
from router.tools.text_edits import EditRefused, TextEdit, apply_edits

__all__ = ["FILE_TOOLS"]

READ_MAX_BYTES: Final = 16 * 1024  # what read_file answers with, whatever the range
# How far into a file read_file reads to reach the lines asked for; memory stays at one line
# of READ_MAX_BYTES, so this bounds only the time a call spends (docs/tools.md).
READ_SCAN_MAX_BYTES: Final = 64 * 1024 * 1024
READ_MAX_BYTES_BASE64: Final = 32 * 1024 * 1024
EDIT_MAX_BYTES: Final = 16 * 1024 * 1024
_TRUNCATED: Final = "[output truncated]"


def _read_file(call: ToolCall) -> ToolResult:
    given = required_str(call.params, "path")
    start = optional_int(call.params, "start_line", 1)
    end = optional_int(call.params, "end_line", -1)
    numbered = optional_bool(call.params, "append_loc", False)
    path = call.path()
    try:
        size = path.stat().st_size
    except OSError:
        return {"error": f"cannot stat file: {given}"}
    if size > READ_MAX_BYTES and end == -1 and not call.base64:
        return {
            "error": f"file too large ({size} bytes, max {READ_MAX_BYTES}). Use "
            "start_line/end_line to read a portion."
        }
    try:
        file = open_regular_file(path)
    except OSError:
        return {"error": f"failed to open file: {given}"}
    with file:
        if call.base64:
            return _read_base64(file, size)
        reader = LineReader(file, READ_SCAN_MAX_BYTES)
        text = _read_lines(reader, start, end, numbered)
    if reader.exhausted and not text:
        return {
            "error": f"line {start} is past the first {READ_SCAN_MAX_BYTES} bytes of {given}, "
            "the most read_file reads"
        }
    return {"plain_text_response": text}


def _read_lines(reader: LineReader, start: int, end: int, numbered: bool) -> str:
    """Lines ``start``..``end`` (-1: to the end), at most READ_MAX_BYTES of them in all."""
    out: list[str] = []
    used = 0
    number = 0
    while end == -1 or number < end:
        number += 1
        if number < start:
            if not reader.skip_line():
                break
            continue
        # A line longer than the answer may be never fits: it is read past, not kept.
        line = reader.next_line(READ_MAX_BYTES)
        if line is None:
            break
        content, whole = line
        text = content.decode("utf-8", errors="replace")
        piece = f"{number}\u2192{text}\n" if numbered else f"{text}\n"
        size = len(piece.encode())
        if not whole or used + size > READ_MAX_BYTES:
            out.append(_TRUNCATED)
            return "".join(out)
        out.append(piece)
        used += size
    if reader.exhausted and out:
        out.append(_TRUNCATED)
    return "".join(out)


def _read_base64(file: BinaryIO, size: int) -> ToolResult:
    too_large = {"error": f"file too large ({size} bytes, max {READ_MAX_BYTES_BASE64})"}
    if size > READ_MAX_BYTES_BASE64:
        return too_large
    # One byte past the cap: the file may have grown since its size was taken.
    content = file.read(READ_MAX_BYTES_BASE64 + 1)
    if len(content) > READ_MAX_BYTES_BASE64:
        return too_large
    return {"base64": base64.b64encode(content).decode(), "size_bytes": len(content)}


def _write_file(call: ToolCall) -> ToolResult:
    given = required_str(call.params, "path")
    content = required_str(call.params, "content")
    path = call.path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode())
    except OSError:
        return {"error": f"failed to write file: {given}"}
    return {"result": "file written successfully", "path": given, "bytes": len(content.encode())}


def _edits(params: dict[str, Any]) -> list[TextEdit]:
    raw = params.get("edits")
    if not isinstance(raw, list) or not raw:
        raise BadToolParams('"edits" must be a non-empty array')
    edits: list[TextEdit] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise BadToolParams(f"edits[{i}] must be an object")
        old, new = required_str(item, "old_text"), required_str(item, "new_text")
        if not old:
            raise BadToolParams(f"edits[{i}].old_text must not be empty")
        edits.append(TextEdit(old, new))
    return edits


def _edit_file(call: ToolCall) -> ToolResult:
    given = required_str(call.params, "path")
    edits = _edits(call.params)
    path = call.path()
    try:
        with open_regular_file(path) as file:
            raw = file.read(EDIT_MAX_BYTES + 1)
    except OSError:
        return {"error": f"failed to open file: {given}"}
    if len(raw) > EDIT_MAX_BYTES:
        return {
            "error": f"file too large to edit (more than {EDIT_MAX_BYTES} bytes): {given}; "
            "use write_file to replace it"
        }
    content = raw.decode("utf-8", errors="replace")
    try:
        changed = apply_edits(content, edits, given)
    except EditRefused as exc:
        return {"error": str(exc)}
    try:
        path.write_bytes(changed.encode())
    except OSError:
        return {"error": f"failed to write file: {given}"}
    return {"result": "file edited successfully", "path": given, "edits_applied": len(edits)}


def _string(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


FILE_TOOLS: Final = (
    Tool(
        name="read_file",
        display_name="Read file",
        description="Read the contents of a file. Optionally specify a 1-based line range. If "
        'append_loc is true, each line is prefixed with its line number (e.g. "1\u2192...").',
        parameters={
            "type": "object",
            "properties": {
                "path": _string("Path to the file"),
                "start_line": {
                    "type": "integer",
                    "description": "First line to read, 1-based (default: 1)",
                },
                "end_line": {
                    "type": "integer",
                    "description": "Last line to read, 1-based inclusive (default: end of file)",
                },
                "append_loc": {
                    "type": "boolean",
                    "description": "Prefix each line with its line number",
                },
            },
            "required": ["path"],
        },
        invoke=threaded(_read_file),
    ),
    Tool(
        name="write_file",
        display_name="Write file",
        description="Write content to a file, creating it (including parent directories) if it "
        "does not exist. May use with edit_file for more complex edits.",
        parameters={
            "type": "object",
            "properties": {
                "path": _string("Path of the file to write"),
                "content": _string("Content to write"),
            },
            "required": ["path", "content"],
        },
        invoke=threaded(_write_file),
        write=True,
    ),
    Tool(
        name="edit_file",
        display_name="Edit file",
        description="Edit a file using exact text replacement. Each edits[].old_text must be "
        "unique in the file and is matched against the original content, not incrementally. "
        "Merge nearby changes into one edit instead of overlapping edits. Use write_file to "
        "replace the whole file.",
        parameters={
            "type": "object",
            "properties": {
                "path": _string("Path to the file to edit"),
                "edits": {
                    "type": "array",
                    "description": "One or more exact text replacements to apply",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_text": _string(
                                "Exact text to find; must be unique in the file and must not "
                                "overlap with other edits"
                            ),
                            "new_text": _string("Text to replace old_text with"),
                        },
                        "required": ["old_text", "new_text"],
                    },
                },
            },
            "required": ["path", "edits"],
        },
        invoke=threaded(_edit_file),
        write=True,
    ),
)
