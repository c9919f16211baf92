"""``corral serve``'s flags: spellings, defaults, groups and what each means.

The descriptions here and in :mod:`corral.option_help` are the one source for
``corral serve --help`` and docs/configuration.md (scripts/gen_config_docs.py stops when a flag
has none). Flags are spelled as llama-server's, with ``LLAMA_ARG_*`` fallbacks read when the
parser is built.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TypeVar

from corral.option_flags import add_model_flags
from corral.options import parse_bool
from router.cli_help import SuggestingParser, terminal_text
from router.no_effect_flags import add_no_effect_flags

__all__ = ["SERVE_FLAG_HELP", "SERVE_METAVARS", "serve_parser"]

Number = TypeVar("Number", int, float)


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def _env_number(name: str, default: Number, kind: type[Number]) -> Number:
    """The variable as a number when it is set and not empty, else the default."""
    value = _env(name)
    return kind(value) if value else default


def _env_bool(name: str, default: bool) -> bool:
    try:
        return parse_bool((_env(name) or "").strip())
    except ValueError:
        return default  # unset or not an on/off word: as if unset


# `corral serve`'s own flags, by argparse dest: (environment variable or "", description).
SERVE_FLAG_HELP: dict[str, tuple[str, str]] = {
    "host": ("LLAMA_ARG_HOST", "listen address; beyond loopback, also set an API key"),
    "port": ("LLAMA_ARG_PORT", "listen port; `0` picks a free one (the log says which)"),
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
    "cors_origins": (
        "LLAMA_ARG_CORS_ORIGINS",
        "origins browsers may call from, comma-separated; `localhost` = http(s) on "
        "localhost, 127.0.0.1 or [::1], any port",
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
        "requests that may wait for model loads at once, all models together; more are "
        "refused with 503 and `Retry-After` (`0`: no limit)",
    ),
    "offline": (
        "LLAMA_ARG_OFFLINE",
        "no implicit downloads: `-hf` must name a cached model; an explicit `POST /models` "
        "still downloads, as in llama-server",
    ),
    "ui_mcp_proxy": (
        "LLAMA_ARG_UI_MCP_PROXY",
        "serve llama-server's `/cors-proxy`, which fetches any http(s) URL for a caller (its "
        "Web UI's MCP client): only where every caller is trusted; off: 403",
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
}

# Placeholders shown instead of argparse's (``MODEL_FILES`` and the like).
SERVE_METAVARS: dict[str, str] = {
    "host": "HOST",
    "port": "PORT",
    "models_dir": "DIR",
    "model_files": "FILE",
    "mmproj_file": "FILE",
    "models_max": "N",
    "models_memory_max": "SIZE",
    "models_spare": "N",
    "api_keys": "KEY[,KEY…]",
    "api_key_files": "FILE",
    "max_body": "SIZE",
    "cors_origins": "LIST",
    "hf_repos": "ORG/REPO[:TAG]",
    "hf_file": "FILE",
    "timeout": "SECONDS",
    "stall_timeout": "SECONDS",
    "load_timeout": "SECONDS",
    "max_queue": "N",
    "hf_token": "TOKEN",
    "models_preset": "FILE",
    "alias": "NAME[,NAME…]",
    "tags": "TAG[,TAG…]",
    "log_format": "text|json",
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


def _help(dest: str, default: object) -> str:
    # A missing description is caught by scripts/gen_config_docs.py (and its test), not here.
    variable, meaning = SERVE_FLAG_HELP.get(dest, ("", ""))
    shown = _shown(dest, default)
    text = f"{terminal_text(meaning)} (default: {shown})"
    return text + (f" [{variable}]" if variable else "")


class _MmprojAuto(argparse.Action):
    """``--mmproj-auto`` on, ``--no-mmproj`` off; unset leaves it to presets (and the
    ``LLAMA_ARG_MMPROJ_AUTO`` variable, read with the per-model options)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, "true" if option == "--mmproj-auto" else "false")


def _add(group: argparse._ArgumentGroup, *flags: str, dest: str, **kwargs: Any) -> None:
    if dest in SERVE_METAVARS:
        kwargs["metavar"] = SERVE_METAVARS[dest]
    action = group.add_argument(*flags, dest=dest, **kwargs)
    action.help = _help(dest, action.default)


def serve_parser() -> SuggestingParser:
    parser = SuggestingParser(
        prog="corral serve",
        description="Serve every local model behind one OpenAI-compatible address.",
        epilog="Every flag: docs/configuration.md. A flag beats its [VARIABLE].",
    )
    server = parser.add_argument_group("server")
    _add(server, "--host", dest="host", default=_env("LLAMA_ARG_HOST", "127.0.0.1"))
    _add(server, "--port", dest="port", type=int, default=_env_number("LLAMA_ARG_PORT", 8080, int))
    _add(
        server,
        "-to",
        "--timeout",
        dest="timeout",
        type=float,
        default=_env_number("LLAMA_ARG_TIMEOUT", 3600.0, float),
    )
    _add(
        server,
        "--stall-timeout",
        dest="stall_timeout",
        type=float,
        default=_env_number("CORRAL_STALL_TIMEOUT", 60.0, float),
    )
    _add(
        server,
        "--load-timeout",
        dest="load_timeout",
        type=float,
        default=_env_number("CORRAL_LOAD_TIMEOUT", 600.0, float),
    )
    _add(
        server,
        "--max-queue",
        dest="max_queue",
        type=int,
        default=_env_number("CORRAL_MAX_QUEUE", 512, int),
    )
    models = parser.add_argument_group("models")
    _add(models, "--models-dir", dest="models_dir", type=Path, default=_env("LLAMA_ARG_MODELS_DIR"))
    _add(models, "-m", "--model", dest="model_files", type=Path, action="append", default=[])
    _add(models, "-hf", "-hfr", "--hf-repo", dest="hf_repos", action="append")
    _add(models, "-mm", "--mmproj", dest="mmproj_file", type=Path, default=_env("LLAMA_ARG_MMPROJ"))
    _add(
        models,
        "--mmproj-auto",
        "--no-mmproj",
        "--no-mmproj-auto",
        dest="mmproj_auto",
        action=_MmprojAuto,
        nargs=0,
        default=None,
    )
    _add(models, "-hff", "--hf-file", dest="hf_file", default=None)
    _add(
        models,
        "--models-preset",
        dest="models_preset",
        type=Path,
        default=_env("LLAMA_ARG_MODELS_PRESET"),
    )
    _add(models, "-a", "--alias", dest="alias", default=_env("LLAMA_ARG_ALIAS"))
    _add(models, "--tags", dest="tags", default=_env("LLAMA_ARG_TAGS"))
    _add(
        models,
        "--models-max",
        dest="models_max",
        type=int,
        default=_env_number("LLAMA_ARG_MODELS_MAX", 4, int),
    )
    _add(
        models,
        "--models-memory-max",
        dest="models_memory_max",
        default=_env("CORRAL_MODELS_MEMORY_MAX"),
    )
    _add(
        models,
        "--models-spare",
        dest="models_spare",
        type=int,
        default=_env_number("CORRAL_MODELS_SPARE", 1, int),
    )
    _add(
        models,
        "--models-autoload",
        dest="models_autoload",
        action=argparse.BooleanOptionalAction,
        # As upstream, LLAMA_ARG_NO_MODELS_AUTOLOAD set to anything turns autoload off.
        default=_env("LLAMA_ARG_NO_MODELS_AUTOLOAD") is None
        and _env_bool("LLAMA_ARG_MODELS_AUTOLOAD", True),
    )
    _add(
        models,
        "--offline",
        dest="offline",
        action="store_true",
        default=_env_bool("LLAMA_ARG_OFFLINE", False),
    )
    _add(models, "-hft", "--hf-token", dest="hf_token", default=None)
    security = parser.add_argument_group("security")
    _add(security, "--api-key", dest="api_keys", action="append")
    _add(security, "--api-key-file", dest="api_key_files", action="append")
    _add(security, "--max-body", dest="max_body", default=_env("CORRAL_MAX_BODY", "64M"))
    # No default here: unset, it depends on whether tools are on (router.cli).
    _add(security, "--cors-origins", dest="cors_origins", default=_env("LLAMA_ARG_CORS_ORIGINS"))
    tools = parser.add_argument_group("tools (docs/tools.md)")
    _add(tools, "--tools", dest="tools", default=_env("LLAMA_ARG_TOOLS"))
    _add(tools, "--tools-root", dest="tools_root", type=Path, default=_env("CORRAL_TOOLS_ROOT"))
    _add(
        tools,
        "--tools-allow-exec",
        dest="tools_allow_exec",
        action="store_true",
        default=_env_bool("CORRAL_TOOLS_ALLOW_EXEC", False),
    )
    _add(
        tools,
        "--mcp-servers-config",
        dest="mcp_servers_config",
        type=Path,
        default=_env("LLAMA_ARG_MCP_SERVERS_CONFIG"),
    )
    _add(
        tools,
        "--mcp-servers-json",
        dest="mcp_servers_json",
        default=_env("LLAMA_ARG_MCP_SERVERS_JSON"),
    )
    _add(
        security,
        "--ui-mcp-proxy",
        "--webui-mcp-proxy",
        dest="ui_mcp_proxy",
        action=argparse.BooleanOptionalAction,
        default=_env_bool("LLAMA_ARG_UI_MCP_PROXY", False),
    )
    logging = parser.add_argument_group("logging")
    _add(
        logging,
        "--log-format",
        dest="log_format",
        choices=("text", "json"),
        default=_env("CORRAL_LOG_FORMAT"),
    )
    _add(
        logging,
        "--log-requests",
        dest="log_requests",
        action=argparse.BooleanOptionalAction,
        default=_env_bool("CORRAL_LOG_REQUESTS", True),
    )
    add_model_flags(parser)
    add_no_effect_flags(parser)
    return parser
