"""``--mcp-servers-config`` / ``--mcp-servers-json``: Cursor's ``mcpServers`` format."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.tools.mcp.mcp_config import McpConfigError, McpServerConfig, load_mcp_servers


def test_every_key_is_read() -> None:
    text = (
        '{"mcpServers": {"fs": {"command": "srv", "args": ["-v"], "env": {"A": "1"}, '
        '"cwd": "/tmp", "timeout_ms": 1500}}}'
    )
    assert load_mcp_servers(None, text) == (
        McpServerConfig("fs", "srv", ("-v",), {"A": "1"}, "/tmp", 1.5),
    )


def test_an_entry_without_a_command_is_skipped_as_llama_server_skips_it() -> None:
    text = '{"mcpServers": {"none": {"args": []}, "ok": {"command": "srv"}}}'
    assert [server.name for server in load_mcp_servers(None, text)] == ["ok"]


def test_the_file_and_the_inline_json_add_up(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {"a": {"command": "x"}}}')
    servers = load_mcp_servers(config, '{"mcpServers": {"b": {"command": "y"}}}')
    assert [server.name for server in servers] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not valid json", "not valid JSON"),
        ('{"mcpServers": []}', '"mcpServers" object'),
        ('{"mcpServers": {"a": {"command": "x", "args": "-v"}}}', "args must be an array"),
        ('{"mcpServers": {"a": {"command": "x", "timeout_ms": 0}}}', "timeout_ms"),
        ('{"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}', "env must be"),
    ],
)
def test_configuration_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(McpConfigError, match=message):
        load_mcp_servers(None, text)


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="cannot read it"):
        load_mcp_servers(tmp_path / "missing.json", None)


def test_a_server_named_twice_is_an_error(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {"a": {"command": "x"}}}')
    with pytest.raises(McpConfigError, match="named twice: a"):
        load_mcp_servers(config, '{"mcpServers": {"a": {"command": "y"}}}')
