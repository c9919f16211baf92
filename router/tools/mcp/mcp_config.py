"""``--mcp-servers-config FILE`` / ``--mcp-servers-json JSON``: Cursor's ``mcpServers`` format.

Each entry takes ``command`` (required: an entry without one is skipped, as llama-server does),
``args``, ``env`` (merged over the router's environment, less its secrets), ``cwd`` and
``timeout_ms`` (per call, default 30000). JSON that does not parse, or a value of the wrong
type, stops the router at startup: a half-read configuration would silently drop servers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import structlog

__all__ = ["McpConfigError", "McpServerConfig", "load_mcp_servers", "parse_mcp_servers"]

DEFAULT_TIMEOUT_MS: Final = 30_000

_log = structlog.get_logger("corral.tools")


class McpConfigError(Exception):
    """The MCP configuration cannot be used; the router must not start."""


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"{what} must be an array of strings")
    return tuple(value)


def _entry(name: str, raw: Any, where: str) -> McpServerConfig | None:
    what = f"{where}: mcpServers.{name}"
    if not isinstance(raw, dict):
        raise McpConfigError(f"{what} must be an object")
    command = raw.get("command", "")
    if not isinstance(command, str):
        raise McpConfigError(f"{what}.command must be a string")
    if not command:
        _log.warning("MCP server has no command, skipping it", server=name)
        return None
    env = raw.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise McpConfigError(f"{what}.env must be an object of strings")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise McpConfigError(f"{what}.cwd must be a string")
    timeout_ms = raw.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 1:
        raise McpConfigError(f"{what}.timeout_ms must be a whole number of milliseconds")
    args = _strings(raw.get("args", []), f"{what}.args")
    return McpServerConfig(name, command, args, dict(env), cwd or None, timeout_ms / 1000)


def parse_mcp_servers(text: str, where: str) -> list[McpServerConfig]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{where}: not valid JSON: {exc}") from None
    servers = document.get("mcpServers", {}) if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{where}: expected an object with an "mcpServers" object')
    parsed = (_entry(name, raw, where) for name, raw in servers.items())
    return [config for config in parsed if config is not None]


def load_mcp_servers(config_file: Path | None, inline: str | None) -> tuple[McpServerConfig, ...]:
    """The file's servers, then the inline JSON's; a name given twice is an error."""
    servers: list[McpServerConfig] = []
    if config_file is not None:
        try:
            text = config_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise McpConfigError(
                f"--mcp-servers-config {config_file}: cannot read it: {exc}"
            ) from None
        servers += parse_mcp_servers(text, f"--mcp-servers-config {config_file}")
    if inline:
        servers += parse_mcp_servers(inline, "--mcp-servers-json")
    names = [server.name for server in servers]
    if twice := sorted({name for name in names if names.count(name) > 1}):
        raise McpConfigError(f"MCP server named twice: {', '.join(twice)}")
    return tuple(servers)
