"""What ``corral serve`` was asked to do, parsed once from flags and ``LLAMA_ARG_*`` variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from router.security.api_keys import ApiKey
from router.tools.mcp_config import McpServerConfig

__all__ = ["ServeSettings"]


@dataclass(frozen=True, slots=True)
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    models_dir: Path | None = None
    model_files: list[Path] = field(default_factory=list)
    mmproj_file: Path | None = None  # the -m models' projector (--mmproj)
    models_max: int = 4
    models_memory_max: int = 0  # bytes the running models may hold; 0: no limit
    models_spare: int = 1  # spare workers kept warm for the next load (router.workers.spares)
    models_autoload: bool = True
    models_preset: Path | None = None
    # The hub repository models_preset came from (``-hf`` on a remote preset): that file may set
    # only upstream's whitelist of keys (router/catalogue/remote_presets.py); None: the user's.
    models_preset_repo: str | None = None
    hf_repos: tuple[str, ...] = ()  # hub-cache models to load at startup ("org/repo[:TAG]")
    timeout: float = 3600.0  # longest silence from a worker within one response
    # Faults (docs/operations.md): seconds without progress before a busy worker (a loading
    # one) is killed, 0 never; requests that may wait for loads at once, 0 no bound.
    stall_timeout: float = 60.0
    load_timeout: float = 600.0
    max_queue: int = 512
    # The order of waiting requests (router/scheduling/waiting_line.py): "swap" or "fifo", and
    # the seconds after which a waiting request goes ahead of every other.
    schedule: str = "swap"
    schedule_wait_max: float = 30.0
    offline: bool = False
    cache_dir: Path | None = None  # the hub cache; None leaves cache models out
    # Per-model defaults from the command line, by canonical option name ({"ctx-size": "2048"}).
    model_options: dict[str, str] = field(default_factory=dict)
    # Kept out of repr so that logging the settings never prints a key.
    api_keys: tuple[ApiKey, ...] = field(default=(), repr=False)
    cors_origins: tuple[str, ...] = ("*",)
    # Host names served besides loopback ones (corral/http/hosts.py); "*": any.
    allowed_hosts: tuple[str, ...] = ()
    hf_token: str | None = field(default=None, repr=False)  # for download children only
    log_format: str | None = None  # "text" or "json"; None: text on a terminal, else JSON
    log_requests: bool = True  # one access line per request
    otel_endpoint: str | None = None  # --otel-endpoint: traces' collector (router.observe.tracing)
    ui_mcp_proxy: bool = False  # /cors-proxy fetches URLs for callers; else 403
    ui_mcp_proxy_private: bool = False  # ... loopback, link-local and private ones too
    max_body: int = 64 << 20  # bytes of a request body; more is a 413 before it is read
    max_connections: int = 512  # open client connections; more are refused 503; 0: no limit
    # Single-model mode (docs/serving.md): one -m or -hf model, no models dir or preset. That
    # model answers every request whatever it names, and takes --alias/--tags (which are
    # parsed in any mode but applied only in this one).
    single_model: bool = False
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    # Server-side tools (docs/tools.md): built-in tool names ("all" or names), the directory the
    # file tools are confined to (None: the working directory), the opt-in to
    # exec_shell_command, and the stdio MCP servers.
    tools: tuple[str, ...] = ()
    tools_root: Path | None = None
    tools_allow_exec: bool = False
    mcp_servers: tuple[McpServerConfig, ...] = ()
    # llama-server's server flags (router/api/mounts.py, router/server.py): the path every
    # route is under ("" or "/v2"), a directory of static files, SO_REUSEPORT, and TLS.
    api_prefix: str = ""
    ui_settings: dict[str, Any] = field(default_factory=dict)  # --ui-config, for /props
    static_path: Path | None = None
    reuse_port: bool = False
    ssl_key_file: Path | None = None
    ssl_cert_file: Path | None = None
    # llama-server flags given that Corral accepts without implementing
    # (router.cli.no_effect).
    no_effect_flags: tuple[str, ...] = ()
