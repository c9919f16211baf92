"""``corral serve``'s flags for who may call it and what it tells: security, tools, logging.

Rows of :class:`~router.cli.serve_flag.ServeFlag`, as :mod:`router.cli.serve_flags`' (which
joins them into the one table): each is a flag, its help and the setting it fills.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from router.cli.serve_flag import ServeFlag, at_least_zero, body_size, directory, names

__all__ = ["ACCESS_FLAGS"]

_ON_OFF = argparse.BooleanOptionalAction
_TOOLS = "tools (docs/tools.md)"
ACCESS_FLAGS = (
    ServeFlag(
        "security",
        ("--api-key",),
        "api_keys",
        "admin keys clients must send, comma-separated",
        "LLAMA_API_KEY",
        metavar="KEY[,KEY…]",
        action="append",
        reads_variable=False,
    ),
    ServeFlag(
        "security",
        ("--api-key-file",),
        "api_key_files",
        "file of keys, one per line: `KEY [admin|inference] [concurrency=N] [rpm=N]` (default "
        "admin, no limits); blank and `#` lines ignored; unreadable or malformed = startup "
        "error. See operations.md, Keys, scopes and limits",
        "LLAMA_ARG_API_KEY_FILE",
        metavar="FILE",
        action="append",
        reads_variable=False,
    ),
    ServeFlag(
        "security",
        ("--max-body",),
        "max_body",
        "Corral: largest request body (`64M`; K/M/G/T are powers of 1024); larger ones get 413 "
        "before they are read",
        "CORRAL_MAX_BODY",
        "64M",
        "SIZE",
        setting=body_size,
    ),
    ServeFlag(
        "security",
        ("--max-connections",),
        "max_connections",
        "Corral: client connections open at once (each is a file descriptor: raise `ulimit -n` "
        "with it); a newcomer closes the one waiting longest for a request head, or is answered "
        "503 when all are busy; an address other than loopback holds half at most; `0`: no "
        "limit",
        "CORRAL_MAX_CONNECTIONS",
        512,
        "N",
        convert=int,
        setting=at_least_zero("0 (no limit) or a number of connections"),
    ),
    ServeFlag(
        "security",
        ("--cache-share",),
        "cache_share",
        "Corral: all keys share the workers' prompt caches (one cache scope, as without keys): "
        "more cache hits, but `cached_tokens` tells a key what another asked. See security.md, "
        "Another member of the team",
        "CORRAL_CACHE_SHARE",
        False,
        action="store_true",
    ),
    # No default here: unset, it depends on whether tools are on (router.settings).
    ServeFlag(
        "security",
        ("--cors-origins",),
        "cors_origins",
        "origins browsers may call from, comma-separated; `localhost` = http(s) on "
        "localhost, 127.0.0.1 or [::1], any port",
        "LLAMA_ARG_CORS_ORIGINS",
        metavar="LIST",
        shown="`*`; `localhost` with tools or MCP servers",
        setting=names,
    ),
    ServeFlag(
        "security",
        ("--allowed-hosts",),
        "allowed_hosts",
        "Host names the router answers to besides loopback ones, comma-separated (a proxy's "
        "name, a LAN name); `*`: any. Listening on loopback only, other names get 403 (DNS "
        "rebinding); beyond loopback, unset means any",
        "CORRAL_ALLOWED_HOSTS",
        metavar="LIST",
        shown="loopback names only, when listening on loopback only",
        setting=names,
    ),
    # llama-server flags (issue 29): TLS.
    ServeFlag(
        "security",
        ("--ssl-key-file",),
        "ssl_key_file",
        "PEM private key: with `--ssl-cert-file`, the router answers HTTPS only",
        "LLAMA_ARG_SSL_KEY_FILE",
        metavar="FILE",
        convert=Path,
    ),
    ServeFlag(
        "security",
        ("--ssl-cert-file",),
        "ssl_cert_file",
        "PEM certificate (chain) for `--ssl-key-file`",
        "LLAMA_ARG_SSL_CERT_FILE",
        metavar="FILE",
        convert=Path,
    ),
    ServeFlag(
        _TOOLS,
        ("--tools",),
        "tools",
        "built-in tools the model may call through `/tools`, comma-separated, or `all`: "
        "read_file, file_glob_search, grep_search, exec_shell_command, write_file, edit_file, "
        "get_info. They read and write files as the router's user: see tools.md before turning "
        "them on. Sets `--cors-origins` to `localhost` unless it is given",
        "LLAMA_ARG_TOOLS",
        metavar="all|NAME[,NAME…]",
        setting=names,
    ),
    ServeFlag(
        _TOOLS,
        ("--tools-root",),
        "tools_root",
        "Corral: the directory file tools are confined to (`..`, symlinks and absolute paths "
        "leading out are refused)",
        "CORRAL_TOOLS_ROOT",
        metavar="DIR",
        shown="the working directory",
        convert=Path,
        setting=directory,
    ),
    ServeFlag(
        _TOOLS,
        ("--tools-allow-exec",),
        "tools_allow_exec",
        "Corral: also offer `exec_shell_command` (any command, as the router's user); without "
        "it `--tools all` leaves it out and naming it is a startup error",
        "CORRAL_TOOLS_ALLOW_EXEC",
        False,
        action="store_true",
    ),
    ServeFlag(
        _TOOLS,
        ("--mcp-servers-config",),
        "mcp_servers_config",
        "JSON file of stdio MCP servers (Cursor's `mcpServers` format) whose tools `/tools` "
        "offers as `<server>_<tool>`; sets `--cors-origins` to `localhost` unless it is given",
        "LLAMA_ARG_MCP_SERVERS_CONFIG",
        metavar="FILE",
        convert=Path,
    ),
    ServeFlag(
        _TOOLS,
        ("--mcp-servers-json",),
        "mcp_servers_json",
        "the same MCP servers as inline JSON",
        "LLAMA_ARG_MCP_SERVERS_JSON",
        metavar="JSON",
    ),
    ServeFlag(
        "security",
        ("--ui-mcp-proxy", "--webui-mcp-proxy"),
        "ui_mcp_proxy",
        "serve llama-server's `/cors-proxy`, which fetches an http(s) URL for an admin caller "
        "(its Web UI's MCP client), public addresses only unless `--ui-mcp-proxy-private`; "
        "off: 403",
        "LLAMA_ARG_UI_MCP_PROXY",
        False,
        action=_ON_OFF,
    ),
    ServeFlag(
        "security",
        ("--ui-mcp-proxy-private",),
        "ui_mcp_proxy_private",
        "let `/cors-proxy` fetch loopback, link-local and private addresses too (MCP servers on "
        "this machine or the LAN); without it they get 403",
        "CORRAL_UI_MCP_PROXY_PRIVATE",
        False,
        action="store_true",
    ),
    ServeFlag(
        "logging",
        ("--log-format",),
        "log_format",
        "`text`: readable lines; `json`: one JSON object per line; default: text on a "
        "terminal, JSON otherwise",
        "CORRAL_LOG_FORMAT",
        metavar="text|json",
        shown="text on a terminal, else json",
        choices=("text", "json"),
    ),
    ServeFlag(
        "logging",
        ("-lv", "--verbosity", "--log-verbosity"),
        "log_verbosity",
        "what the log says, in llama-server's levels: `1` errors, `2` warnings too, `3` info: "
        "one line per request and each model's lifecycle once, `4` debug too: llama.cpp's own "
        "lines, the workers' server banners, polls of `/models`, `/health`, `/activity` and "
        "`/metrics`; `--verbose` is `4` as well",
        "LLAMA_ARG_LOG_VERBOSITY",
        3,
        "N",
        convert=int,
    ),
    ServeFlag(
        "logging",
        ("--log-requests",),
        "log_requests",
        "one line per request at info: method, path, model, status, duration, prompt and "
        "generated tokens, tokens/s",
        "CORRAL_LOG_REQUESTS",
        True,
        action=_ON_OFF,
    ),
    # Traces (docs/operations.md): router.observe.tracing reads the other OTEL_* variables.
    ServeFlag(
        "logging",
        ("--otel-endpoint",),
        "otel_endpoint",
        "send an OpenTelemetry trace of each model request (OTLP/HTTP protobuf) to the "
        "collector at this base URL (`/v1/traces` is added); the SDK's other `OTEL_*` "
        "variables apply; off unless this or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        metavar="URL",
    ),
)
