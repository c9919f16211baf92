"""What each ``corral serve`` flag means, and how ``--help`` shows it.

The descriptions here and in the option rows (:mod:`corral.options.rows`) are the one source for
``corral serve --help`` and docs/configuration.md (scripts/gen_config_docs.py stops when a flag
has none). The variable named beside a description is the one the flag falls back to
(:mod:`router.cli.serve_flags` reads it for the default, or :mod:`router.cli.main` after parsing),
so
the docs and the parser cannot name different variables.
"""

from __future__ import annotations

from router.cli.help import terminal_text

__all__ = ["SERVE_FLAG_HELP", "SERVE_METAVARS", "flag_help"]

# `corral serve`'s own flags, by argparse dest: (environment variable or "", description).
SERVE_FLAG_HELP: dict[str, tuple[str, str]] = {
    "host": ("LLAMA_ARG_HOST", "listen address; beyond loopback, also set an API key"),
    "port": ("LLAMA_ARG_PORT", "listen port; `0` picks a free one (the log says which)"),
    # llama-server flags (issue 29).
    "version": ("", "print Corral's and llama.cpp's versions and exit"),
    "cache_list": ("", "list the hub cache's models (as `corral ls`) and exit"),
    "completion_bash": (
        "",
        "print Corral's bash completion script (every command and flag) and exit: redirect it "
        "into a file that bash sources",
    ),
    "api_prefix": (
        "LLAMA_ARG_API_PREFIX",
        "serve every route under this path (`/v2`: `/v2/health`, `/v2/v1/models`, the Web UI "
        "at `/v2/`); any other path is 404",
    ),
    "static_path": (
        "LLAMA_ARG_STATIC_PATH",
        "serve the files of this directory (`/` is its `index.html`) ahead of the routes, as "
        "llama-server's `--path`; paths leading out of it are not served",
    ),
    "reuse_port": (
        "LLAMA_ARG_REUSE_PORT",
        "listen with `SO_REUSEPORT`, so that other processes may listen on the same port",
    ),
    "ssl_key_file": (
        "LLAMA_ARG_SSL_KEY_FILE",
        "PEM private key: with `--ssl-cert-file`, the router answers HTTPS only",
    ),
    "ssl_cert_file": ("LLAMA_ARG_SSL_CERT_FILE", "PEM certificate (chain) for `--ssl-key-file`"),
    "models_dir": (
        "LLAMA_ARG_MODELS_DIR",
        "directory of models: each top-level `*.gguf` is a model named by its stem, each "
        "subdirectory one model (first shard of a split model; `mmproj`/`draft` files are not "
        "models)",
    ),
    "model_files": ("", "add this GGUF as a model named by its stem and load it at startup"),
    "mmproj_auto": (
        "LLAMA_ARG_MMPROJ_AUTO",
        "pair models with the projector found beside them (hub cache, `--models-dir`); "
        "`--no-mmproj` (or the preset key `no-mmproj`) turns it off, a named `mmproj` still "
        "loads",
    ),
    "mmproj_file": (
        "LLAMA_ARG_MMPROJ",
        "multimodal projector for the `-m` models (images, audio); hub and `--models-dir` "
        "models find theirs beside them",
    ),
    "models_max": (
        "LLAMA_ARG_MODELS_MAX",
        "models loading, loaded or sleeping at once (downloads do not count); `<= 0`: unlimited",
    ),
    "schedule": (
        "CORRAL_SCHEDULE",
        "Corral: the order waiting requests are served in. `swap`: a loaded model's requests "
        "before a swap, interactive before batch (the key file's `class=`), keys in turns, "
        "none waiting past `--schedule-wait-max`; `fifo`: llama.cpp's router's strict arrival "
        "order",
    ),
    "schedule_wait_max": (
        "CORRAL_SCHEDULE_WAIT_MAX",
        "Corral: seconds a request waits before it goes ahead of every other (`--schedule "
        "swap`): running models then take no new request until one is idle and evicted for "
        "it; batch requests go ahead of interactive ones too (`0`: never)",
    ),
    "models_memory_max": (
        "CORRAL_MODELS_MEMORY_MAX",
        "Corral: memory the running models may hold (`512M`, `24G`; K/M/G/T are powers of "
        "1024); idle models are evicted, least recent first, until a new one fits. A model's "
        "size is its preset `memory`, else the most its worker was seen to hold, else an "
        "estimate (files, KV cache, process); a model alone always loads",
    ),
    "models_spare": (
        "CORRAL_MODELS_SPARE",
        "Corral: spare workers kept started (imports done, no model) for the next load to "
        "take; never listed, never counted as a model; `0`: none",
    ),
    "models_autoload": (
        "LLAMA_ARG_MODELS_AUTOLOAD",
        "load a model on its first request (per request: `?autoload=true|false`)",
    ),
    "api_keys": ("LLAMA_API_KEY", "admin keys clients must send, comma-separated"),
    "api_key_files": (
        "LLAMA_ARG_API_KEY_FILE",
        "file of keys, one per line: `KEY [admin|inference] [concurrency=N] [rpm=N]` (default "
        "admin, no limits); blank and `#` lines ignored; unreadable or malformed = startup "
        "error. See operations.md, Keys, scopes and limits",
    ),
    "max_body": (
        "CORRAL_MAX_BODY",
        "Corral: largest request body (`64M`; K/M/G/T are powers of 1024); larger ones get 413 "
        "before they are read",
    ),
    "max_connections": (
        "CORRAL_MAX_CONNECTIONS",
        "Corral: client connections open at once; more are answered 503 and closed (each is a "
        "file descriptor: raise `ulimit -n` with it); `0`: no limit",
    ),
    "cors_origins": (
        "LLAMA_ARG_CORS_ORIGINS",
        "origins browsers may call from, comma-separated; `localhost` = http(s) on "
        "localhost, 127.0.0.1 or [::1], any port",
    ),
    "allowed_hosts": (
        "CORRAL_ALLOWED_HOSTS",
        "Host names the router answers to besides loopback ones, comma-separated (a proxy's "
        "name, a LAN name); `*`: any. Listening on loopback only, other names get 403 (DNS "
        "rebinding); beyond loopback, unset means any",
    ),
    "hf_repos": (
        "LLAMA_ARG_HF_REPO",
        "load this hub model (`org/repo[:TAG]`) at startup, downloading it first (with "
        "progress on stderr) when it is not in the hub cache; with `--offline` it must be there; "
        "a repository with a root `preset.ini` is served as that preset (remote preset)",
    ),
    "hf_file": (
        "",
        "with one `-hf REPO`: serve this file of it (a path in the repository), as "
        "llama-server; it must be in the hub cache",
    ),
    "timeout": ("LLAMA_ARG_TIMEOUT", "longest silence (seconds) from a worker within one response"),
    "stall_timeout": (
        "CORRAL_STALL_TIMEOUT",
        "kill a worker with requests in flight that shows no progress (no bytes, no answer to "
        "a liveness probe) for this many seconds; its requests fail with 503, the model shows "
        "`failed` with reason `stalled` (`0`: never)",
    ),
    "load_timeout": (
        "CORRAL_LOAD_TIMEOUT",
        "kill a loading worker that reports no progress for this many seconds; reason "
        "`load_stalled` (`0`: never)",
    ),
    "max_queue": (
        "CORRAL_MAX_QUEUE",
        "requests that may wait for model loads (and, with `--schedule swap`, for a model's "
        "slots) at once, all models together; more are refused with 503 and `Retry-After` "
        "(`0`: no limit)",
    ),
    "list_devices": (
        "",
        "print the GPU devices a worker sees (ggml's, with their memory), as llama-server's "
        "`--list-devices`, then exit",
    ),
    "offline": (
        "LLAMA_ARG_OFFLINE",
        "no implicit downloads: `-hf` must name a cached model; an explicit `POST /models` "
        "still downloads, as in llama-server",
    ),
    "ui_mcp_proxy": (
        "LLAMA_ARG_UI_MCP_PROXY",
        "serve llama-server's `/cors-proxy`, which fetches an http(s) URL for an admin caller "
        "(its Web UI's MCP client), public addresses only unless `--ui-mcp-proxy-private`; "
        "off: 403",
    ),
    "ui_mcp_proxy_private": (
        "CORRAL_UI_MCP_PROXY_PRIVATE",
        "let `/cors-proxy` fetch loopback, link-local and private addresses too (MCP servers on "
        "this machine or the LAN); without it they get 403",
    ),
    "hf_token": (
        "HF_TOKEN",
        "hub token for downloads (else `HF_TOKEN`, else `HUGGING_FACE_HUB_TOKEN`); given to "
        "download processes only, never to workers",
    ),
    "models_preset": ("LLAMA_ARG_MODELS_PRESET", "preset INI file (see Preset keys)"),
    "alias": (
        "LLAMA_ARG_ALIAS",
        "single-model mode: names of the one model, comma-separated; as llama-server, the "
        "first in sorted order is its id and all of them its `aliases`; with several models "
        "it has no effect (a preset's `alias` key names them)",
    ),
    "tags": (
        "LLAMA_ARG_TAGS",
        "single-model mode: tags of the one model, comma-separated (listed as its `tags`); "
        "with several models it has no effect",
    ),
    "tools": (
        "LLAMA_ARG_TOOLS",
        "built-in tools the model may call through `/tools`, comma-separated, or `all`: "
        "read_file, file_glob_search, grep_search, exec_shell_command, write_file, edit_file, "
        "get_info. They read and write files as the router's user: see tools.md before turning "
        "them on. Sets `--cors-origins` to `localhost` unless it is given",
    ),
    "tools_root": (
        "CORRAL_TOOLS_ROOT",
        "Corral: the directory file tools are confined to (`..`, symlinks and absolute paths "
        "leading out are refused)",
    ),
    "tools_allow_exec": (
        "CORRAL_TOOLS_ALLOW_EXEC",
        "Corral: also offer `exec_shell_command` (any command, as the router's user); without "
        "it `--tools all` leaves it out and naming it is a startup error",
    ),
    "mcp_servers_config": (
        "LLAMA_ARG_MCP_SERVERS_CONFIG",
        "JSON file of stdio MCP servers (Cursor's `mcpServers` format) whose tools `/tools` "
        "offers as `<server>_<tool>`; sets `--cors-origins` to `localhost` unless it is given",
    ),
    "mcp_servers_json": (
        "LLAMA_ARG_MCP_SERVERS_JSON",
        "the same MCP servers as inline JSON",
    ),
    "log_format": (
        "CORRAL_LOG_FORMAT",
        "`text`: readable lines; `json`: one JSON object per line; default: text on a "
        "terminal, JSON otherwise",
    ),
    "log_requests": (
        "CORRAL_LOG_REQUESTS",
        "one line per request at info: method, path, model, status, duration, prompt and "
        "generated tokens, tokens/s",
    ),
    "otel_endpoint": (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "send an OpenTelemetry trace of each model request (OTLP/HTTP protobuf) to the "
        "collector at this base URL (`/v1/traces` is added); the SDK's other `OTEL_*` "
        "variables apply; off unless this or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set",
    ),
}

# Placeholders shown instead of argparse's (``MODEL_FILES`` and the like).
SERVE_METAVARS: dict[str, str] = {
    "host": "HOST",
    "port": "PORT",
    "models_dir": "DIR",
    "api_prefix": "PREFIX",
    "static_path": "DIR",
    "ssl_key_file": "FILE",
    "ssl_cert_file": "FILE",
    "model_files": "FILE",
    "mmproj_file": "FILE",
    "models_max": "N",
    "models_memory_max": "SIZE",
    "models_spare": "N",
    "api_keys": "KEY[,KEY…]",
    "api_key_files": "FILE",
    "max_body": "SIZE",
    "max_connections": "N",
    "cors_origins": "LIST",
    "allowed_hosts": "LIST",
    "hf_repos": "ORG/REPO[:TAG]",
    "hf_file": "FILE",
    "timeout": "SECONDS",
    "stall_timeout": "SECONDS",
    "load_timeout": "SECONDS",
    "max_queue": "N",
    "schedule_wait_max": "SECONDS",
    "hf_token": "TOKEN",
    "models_preset": "FILE",
    "alias": "NAME[,NAME…]",
    "tags": "TAG[,TAG…]",
    "log_format": "text|json",
    "otel_endpoint": "URL",
    "tools": "all|NAME[,NAME…]",
    "tools_root": "DIR",
    "mcp_servers_config": "FILE",
    "mcp_servers_json": "JSON",
}


# Defaults that read better as words than as argparse's None.
_SHOWN_DEFAULTS = {
    "log_format": "text on a terminal, else json",
    "models_memory_max": "no limit",
    "cors_origins": "`*`; `localhost` with tools or MCP servers",
    "allowed_hosts": "loopback names only, when listening on loopback only",
    "tools_root": "the working directory",
}


def _shown(dest: str, default: object) -> object:
    if dest in _SHOWN_DEFAULTS:
        return _SHOWN_DEFAULTS[dest]
    if default is None or default == []:
        return "none"
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, float) and default.is_integer():
        return int(default)
    return default


def flag_help(dest: str, default: object) -> str:
    """The ``--help`` line of a flag: its meaning, its default and its variable."""
    # A missing description is caught by scripts/gen_config_docs.py (and its test), not here.
    variable, meaning = SERVE_FLAG_HELP.get(dest, ("", ""))
    shown = _shown(dest, default)
    text = f"{terminal_text(meaning)} (default: {shown})"
    return text + (f" [{variable}]" if variable else "")
