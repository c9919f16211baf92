"""``file_glob_search`` and ``grep_search`` (shapes, texts and limits as llama-server's)."""

from __future__ import annotations

import re
from typing import Final

from router.tools.definitions import (
    Tool,
    ToolCall,
    ToolResult,
    optional_bool,
    optional_int,
    optional_str,
    required_str,
    threaded,
)
from router.tools.file_listing import list_entries, path_glob_match
from router.tools.file_tools import file_lines

__all__ = ["SEARCH_TOOLS"]

GLOB_MAX_RESULTS: Final = 100
GREP_MAX_RESULTS: Final = 100
_KINDS: Final = ("file", "dir", "all")


def _wanted(rel: str, include: str, exclude: str) -> bool:
    return path_glob_match(include, rel) and not (exclude and path_glob_match(exclude, rel))


def _file_glob_search(call: ToolCall) -> ToolResult:
    given = required_str(call.params, "path")
    include = optional_str(call.params, "include", "**")
    exclude = optional_str(call.params, "exclude", "")
    kind = optional_str(call.params, "type", "file")
    max_depth = max(0, optional_int(call.params, "max_depth", 0))
    limit = optional_int(call.params, "limit", GLOB_MAX_RESULTS)
    if limit < 1:
        return {"error": f"invalid limit: {limit} (expected 1 or more)"}
    if kind not in _KINDS:
        return {"error": f'invalid type: {kind} (expected "file", "dir" or "all")'}
    base = call.path()
    if not base.is_dir():
        return {"error": f"path does not exist or is not a directory: {given}"}
    listing = list_entries(base, max_depth, kind)  # type: ignore[arg-type]
    matches = [e for e in listing.entries if _wanted(e.rel, include, exclude)]
    shown = matches[: min(limit, GLOB_MAX_RESULTS)]
    text = "".join(f"{e.rel}{'/' if e.is_dir else ''}\n" for e in shown)
    text += f"\n---\nTotal matches: {len(matches)}\n"
    if len(matches) > len(shown):
        text += (
            f"[{len(shown)} results limit reached ({len(matches)} total matches). Refine the "
            "glob pattern to narrow the search.]\n"
        )
    if listing.truncated:
        text += "[results truncated: time budget or unreadable directory]\n"
    entries = [{"path": e.rel, "type": "dir" if e.is_dir else "file"} for e in shown]
    return {"plain_text_response": text, "entries": entries, "base": base.as_posix()}


def _pattern(call: ToolCall) -> re.Pattern[str]:
    source = required_str(call.params, "pattern")
    if optional_bool(call.params, "literal", False):
        source = re.escape(source)
    flags = re.IGNORECASE if optional_bool(call.params, "ignore_case", False) else 0
    return re.compile(source, flags)


def _grep_search(call: ToolCall) -> ToolResult:
    given = required_str(call.params, "path")
    include = optional_str(call.params, "include", "**")
    exclude = optional_str(call.params, "exclude", "")
    numbered = optional_bool(call.params, "return_line_numbers", False)
    context = max(0, optional_int(call.params, "context_lines", 0))
    try:
        pattern = _pattern(call)
    except re.error as exc:
        return {"error": f"invalid regex: {exc}"}
    target = call.path()
    if target.is_file():
        files = [(target, given)]
    elif target.is_dir():
        listing = list_entries(target, 0, "file")
        files = [
            (target / e.rel, e.rel) for e in listing.entries if _wanted(e.rel, include, exclude)
        ]
    else:
        return {"error": f"path does not exist: {given}"}
    show_numbers = numbered or context > 0
    out: list[str] = []
    total = 0
    for path, shown in files:
        # A listed file may be a symlink leading out of the root: never read through it.
        if not call.root.contains(path.resolve()):
            continue
        try:
            lines = file_lines(path.read_bytes())
        except OSError:
            continue
        for i, line in enumerate(lines):
            if total >= GREP_MAX_RESULTS:
                break
            if not pattern.search(line):
                continue
            first, last = (
                (max(0, i - context), min(len(lines) - 1, i + context)) if context else (i, i)
            )
            for j in range(first, last + 1):
                mark = ":" if j == i else "-"
                number = f"{j + 1}{mark}" if show_numbers else ""
                out.append(f"{shown}{mark}{number}{lines[j]}\n")
            if context:
                out.append("--\n")
            total += 1
    text = "".join(out) + f"\n---\nTotal matches: {total}\n"
    if total >= GREP_MAX_RESULTS:
        text += (
            f"[{GREP_MAX_RESULTS} matches limit reached. Narrow the path/pattern/include to see "
            "more.]\n"
        )
    return {"plain_text_response": text}


def _prop(kind: str, description: str) -> dict[str, str]:
    return {"type": kind, "description": description}


SEARCH_TOOLS: Final = (
    Tool(
        name="file_glob_search",
        display_name="File search",
        description="Recursively search for files matching a glob pattern under a directory. "
        "Skips common junk directories (.git, node_modules, build, dist, etc.). A pattern with "
        "no '/' (e.g. \"*.cpp\") matches the file's basename at any depth. A pattern containing "
        "'/' matches the full relative path; unless already anchored with \"**/\" or a leading "
        '\'/\', it is automatically prefixed with "**/". Use type="dir" or "all" to also list '
        "directories; directory entries are suffixed with '/' in the output.",
        parameters={
            "type": "object",
            "properties": {
                "path": _prop("string", "Base directory to search in"),
                "include": _prop(
                    "string",
                    'Glob pattern for files to include (e.g. "*.cpp" or "src/**/*.cpp"). '
                    "Default: **",
                ),
                "exclude": _prop("string", "Glob pattern for files to exclude"),
                "type": _prop("string", 'Entry type to return: "file" (default), "dir" or "all"'),
                "max_depth": _prop(
                    "integer",
                    "Maximum depth to descend into subdirectories (default: 0 = unlimited; 1 = "
                    "direct children only)",
                ),
                "limit": _prop(
                    "integer",
                    f"Maximum number of results to return, capped at {GLOB_MAX_RESULTS} "
                    f"(default {GLOB_MAX_RESULTS})",
                ),
            },
            "required": ["path"],
        },
        invoke=threaded(_file_glob_search),
    ),
    Tool(
        name="grep_search",
        display_name="Grep search",
        description="Search for a pattern in files under a path. Returns matching lines with "
        "file paths (and, unless searching a single file, paths relative to the given "
        "directory). Skips common junk directories (.git, node_modules, build, dist, etc.). "
        "include/exclude: a pattern with no '/' matches the basename at any depth; a pattern "
        "containing '/' matches the full relative path (auto-anchored with \"**/\" unless "
        "already anchored).",
        parameters={
            "type": "object",
            "properties": {
                "path": _prop("string", "File or directory to search in"),
                "pattern": _prop(
                    "string", "Pattern to search for (regular expression unless literal is true)"
                ),
                "include": _prop("string", "Glob pattern to filter files (default: **)"),
                "exclude": _prop("string", "Glob pattern to exclude files"),
                "return_line_numbers": _prop("boolean", "If true, include line numbers in results"),
                "literal": _prop(
                    "boolean",
                    "Treat pattern as a literal string instead of a regular expression (default: "
                    "false)",
                ),
                "ignore_case": _prop("boolean", "Case-insensitive search (default: false)"),
                "context_lines": _prop(
                    "integer",
                    "Number of lines of context to show before and after each match (default: 0)",
                ),
            },
            "required": ["path", "pattern"],
        },
        invoke=threaded(_grep_search),
    ),
)
