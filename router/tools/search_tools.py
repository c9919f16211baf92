"""``file_glob_search`` and ``grep_search`` (shapes, texts and limits as llama-server's).

Patterns and globs are matched by RE2 (:mod:`router.tools.linear_regex`), never by Python's
backtracking ``re``; a pattern RE2 does not take is the tool's ``{"error": …}`` (docs/tools.md).
"""

from __future__ import annotations

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
from router.tools.file_listing import BadGlob, GlobPattern, list_entries
from router.tools.grep_lines import GREP_MAX_CONTEXT_LINES, GrepScan
from router.tools.linear_regex import BadRegex, LinearRegex, escape

__all__ = ["SEARCH_TOOLS"]

GLOB_MAX_RESULTS: Final = 100
_KINDS: Final = ("file", "dir", "all")


class _Filter:
    """``include`` and ``exclude`` of a call (raises :class:`BadGlob`)."""

    def __init__(self, include: str, exclude: str) -> None:
        self._include = GlobPattern.compile(include)
        self._exclude = GlobPattern.compile(exclude) if exclude else None

    def wants(self, rel: str) -> bool:
        return self._include.matches(rel) and not (self._exclude and self._exclude.matches(rel))


def _filter(call: ToolCall) -> _Filter:
    include = optional_str(call.params, "include", "**")
    return _Filter(include, optional_str(call.params, "exclude", ""))


def _file_glob_search(call: ToolCall) -> ToolResult:
    given = required_str(call.params, "path")
    kind = optional_str(call.params, "type", "file")
    max_depth = max(0, optional_int(call.params, "max_depth", 0))
    limit = optional_int(call.params, "limit", GLOB_MAX_RESULTS)
    if limit < 1:
        return {"error": f"invalid limit: {limit} (expected 1 or more)"}
    if kind not in _KINDS:
        return {"error": f'invalid type: {kind} (expected "file", "dir" or "all")'}
    try:
        wanted = _filter(call)
    except BadGlob as exc:
        return {"error": str(exc)}
    base = call.path()
    if not base.is_dir():
        return {"error": f"path does not exist or is not a directory: {given}"}
    listing = list_entries(base, max_depth, kind)  # type: ignore[arg-type]
    matches = [e for e in listing.entries if wanted.wants(e.rel)]
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


def _pattern(call: ToolCall) -> LinearRegex:
    source = required_str(call.params, "pattern")
    if optional_bool(call.params, "literal", False):
        source = escape(source)
    return LinearRegex.compile(source, ignore_case=optional_bool(call.params, "ignore_case", False))


def _grep_search(call: ToolCall) -> ToolResult:
    given = required_str(call.params, "path")
    numbered = optional_bool(call.params, "return_line_numbers", False)
    context = min(max(0, optional_int(call.params, "context_lines", 0)), GREP_MAX_CONTEXT_LINES)
    try:
        pattern = _pattern(call)
    except BadRegex as exc:
        return {"error": f"invalid regex: {exc} (RE2 syntax: no backreferences or lookaround)"}
    try:
        wanted = _filter(call)
    except BadGlob as exc:
        return {"error": str(exc)}
    target = call.path()
    if target.is_file():
        files = [(target, given)]
    elif target.is_dir():
        listing = list_entries(target, 0, "file")
        files = [(target / e.rel, e.rel) for e in listing.entries if wanted.wants(e.rel)]
    else:
        return {"error": f"path does not exist: {given}"}
    scan = GrepScan(pattern, context, show_numbers=numbered or context > 0)
    for path, shown in files:
        if scan.done:
            break
        # A listed file may be a symlink leading out of the root: never read through it.
        if call.root.contains(path.resolve()):
            scan.file(path, shown)
    return {"plain_text_response": scan.text()}


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
                    "string",
                    "Pattern to search for (regular expression unless literal is true; RE2 "
                    "syntax: no backreferences or lookaround)",
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
