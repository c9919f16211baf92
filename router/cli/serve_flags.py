"""``corral serve``'s flags: spellings, groups, types and where each default comes from.

One row of :data:`_SERVE_FLAGS` a flag; its description, placeholder and variable are in
:mod:`router.cli.serve_flag_help`. Flags are spelled as llama-server's, with ``LLAMA_ARG_*``
fallbacks read when the parser is built.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corral.llama_build import corral_version, llama_build_info
from corral.options.flags import add_model_flags
from corral.options.table import parse_bool
from router.cli.commands import run_cache_command
from router.cli.completion import bash_completion
from router.cli.help import SuggestingParser
from router.cli.list_devices import ListDevices
from router.cli.no_effect import add_no_effect_flags
from router.cli.serve_flag_help import SERVE_FLAG_HELP, SERVE_METAVARS, flag_help
from router.cli.shortcuts import add_shortcut_flags

__all__ = ["serve_parser"]


class _MmprojAuto(argparse.Action):
    """``--mmproj-auto`` on, ``--no-mmproj`` off; unset leaves it to presets (and the
    ``LLAMA_ARG_MMPROJ_AUTO`` variable, read with the per-model options)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, "true" if option == "--mmproj-auto" else "false")


class _PrintAndExit(argparse.Action):
    """llama-server's flags that answer and exit: ``--version``, ``-cl``/``--cache-list``."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        if self.dest == "version":
            print(f"corral {corral_version()} (llama.cpp {llama_build_info()})")
            parser.exit(0)
        parser.exit(run_cache_command("ls", []))  # the hub cache's models, as `corral ls`


class _CompletionBash(argparse.Action):
    """``--completion-bash``: print Corral's bash completion script and exit, as llama-server
    prints its own."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        sys.stdout.write(bash_completion(parser))
        parser.exit(0)


@dataclass(frozen=True, slots=True)
class _ServeFlag:
    group: str  # the --help section, in the order first named
    spellings: tuple[str, ...]
    dest: str
    default: Any = None  # when the flag's variable (SERVE_FLAG_HELP) is unset
    convert: Callable[[str], Any] | None = None  # argparse's type
    action: str | type[argparse.Action] | None = None
    choices: tuple[str, ...] | None = None
    nargs: int | None = None
    # False: router.cli.main reads the variable after parsing (a list flag takes it only when
    # absent).
    reads_variable: bool = True
    # As upstream, a variable that turns the flag off when set to anything.
    off_variable: str = ""


_ON_OFF = argparse.BooleanOptionalAction
_TOOLS = "tools (docs/tools.md)"
_SERVE_FLAGS: tuple[_ServeFlag, ...] = (
    _ServeFlag("server", ("--host",), "host", "127.0.0.1"),
    _ServeFlag("server", ("--port",), "port", 8080, int),
    _ServeFlag("server", ("-to", "--timeout"), "timeout", 3600.0, float),
    _ServeFlag("server", ("--stall-timeout",), "stall_timeout", 60.0, float),
    _ServeFlag("server", ("--load-timeout",), "load_timeout", 600.0, float),
    _ServeFlag("server", ("--max-queue",), "max_queue", 512, int),
    # llama-server flags (issue 29).
    _ServeFlag("server", ("--version",), "version", action=_PrintAndExit, nargs=0),
    _ServeFlag("models", ("-cl", "--cache-list"), "cache_list", action=_PrintAndExit, nargs=0),
    _ServeFlag(
        "server",
        ("--completion-bash",),
        "completion_bash",
        action=_CompletionBash,
        nargs=0,
        reads_variable=False,
    ),
    _ServeFlag("server", ("--api-prefix",), "api_prefix", ""),
    _ServeFlag("server", ("--path",), "static_path", convert=Path),
    _ServeFlag("server", ("--reuse-port",), "reuse_port", False, action="store_true"),
    _ServeFlag("models", ("--models-dir",), "models_dir", convert=Path),
    _ServeFlag("models", ("-m", "--model"), "model_files", [], convert=Path, action="append"),
    _ServeFlag(
        "models", ("-hf", "-hfr", "--hf-repo"), "hf_repos", action="append", reads_variable=False
    ),
    _ServeFlag("models", ("-mm", "--mmproj"), "mmproj_file", convert=Path),
    _ServeFlag(
        "models",
        ("--mmproj-auto", "--no-mmproj", "--no-mmproj-auto"),
        "mmproj_auto",
        action=_MmprojAuto,
        nargs=0,
        reads_variable=False,
    ),
    _ServeFlag("models", ("-hff", "--hf-file"), "hf_file"),
    _ServeFlag("models", ("--models-preset",), "models_preset", convert=Path),
    _ServeFlag("models", ("-a", "--alias"), "alias"),
    _ServeFlag("models", ("--tags",), "tags"),
    _ServeFlag("models", ("--models-max",), "models_max", 4, int),
    _ServeFlag("models", ("--models-memory-max",), "models_memory_max"),
    _ServeFlag("models", ("--models-spare",), "models_spare", 1, int),
    _ServeFlag("models", ("--schedule",), "schedule", "swap", choices=("swap", "fifo")),
    _ServeFlag("models", ("--schedule-wait-max",), "schedule_wait_max", 30.0, float),
    _ServeFlag(
        "models",
        ("--models-autoload",),
        "models_autoload",
        True,
        action=_ON_OFF,
        off_variable="LLAMA_ARG_NO_MODELS_AUTOLOAD",
    ),
    _ServeFlag("models", ("--offline",), "offline", False, action="store_true"),
    # GPU (issue 26): prints a worker's devices and exits.
    _ServeFlag(
        "models",
        ("--list-devices",),
        "list_devices",
        nargs=0,
        action=ListDevices,
        reads_variable=False,
    ),
    _ServeFlag("models", ("-hft", "--hf-token"), "hf_token", reads_variable=False),
    _ServeFlag("security", ("--api-key",), "api_keys", action="append", reads_variable=False),
    _ServeFlag(
        "security", ("--api-key-file",), "api_key_files", action="append", reads_variable=False
    ),
    _ServeFlag("security", ("--max-body",), "max_body", "64M"),
    _ServeFlag("security", ("--max-connections",), "max_connections", 512, int),
    # No default here: unset, it depends on whether tools are on (router.cli.main).
    _ServeFlag("security", ("--cors-origins",), "cors_origins"),
    _ServeFlag("security", ("--allowed-hosts",), "allowed_hosts"),
    # llama-server flags (issue 29): TLS.
    _ServeFlag("security", ("--ssl-key-file",), "ssl_key_file", convert=Path),
    _ServeFlag("security", ("--ssl-cert-file",), "ssl_cert_file", convert=Path),
    _ServeFlag(_TOOLS, ("--tools",), "tools"),
    _ServeFlag(_TOOLS, ("--tools-root",), "tools_root", convert=Path),
    _ServeFlag(_TOOLS, ("--tools-allow-exec",), "tools_allow_exec", False, action="store_true"),
    _ServeFlag(_TOOLS, ("--mcp-servers-config",), "mcp_servers_config", convert=Path),
    _ServeFlag(_TOOLS, ("--mcp-servers-json",), "mcp_servers_json"),
    _ServeFlag(
        "security", ("--ui-mcp-proxy", "--webui-mcp-proxy"), "ui_mcp_proxy", False, action=_ON_OFF
    ),
    _ServeFlag(
        "security",
        ("--ui-mcp-proxy-private",),
        "ui_mcp_proxy_private",
        False,
        action="store_true",
    ),
    _ServeFlag("logging", ("--log-format",), "log_format", choices=("text", "json")),
    _ServeFlag("logging", ("--log-requests",), "log_requests", True, action=_ON_OFF),
    # Traces (docs/operations.md): router.observe.tracing reads the other OTEL_* variables.
    _ServeFlag("logging", ("--otel-endpoint",), "otel_endpoint"),
)


def _env_bool(name: str, default: bool) -> bool:
    try:
        return parse_bool(os.environ.get(name, "").strip())
    except ValueError:
        return default  # unset or not an on/off word: as if unset


def _default(flag: _ServeFlag) -> Any:
    """The flag's default, or its variable's value when that is set."""
    # A missing description is caught by scripts/gen_config_docs.py (and its test), not here.
    variable = SERVE_FLAG_HELP.get(flag.dest, ("", ""))[0] if flag.reads_variable else ""
    if not variable:
        # A fresh list per parser: an unused flag's namespace holds the default object itself.
        return list(flag.default) if isinstance(flag.default, list) else flag.default
    if flag.off_variable and flag.off_variable in os.environ:
        return False
    if isinstance(flag.default, bool):
        return _env_bool(variable, flag.default)
    if flag.convert in (int, float):
        value = os.environ.get(variable)  # as if unset when empty
        return flag.convert(value) if value else flag.default
    return os.environ.get(variable, flag.default)


def serve_parser() -> SuggestingParser:
    parser = SuggestingParser(
        prog="corral serve",
        description="Serve every local model behind one OpenAI-compatible address.",
        epilog="Every flag: docs/configuration.md. A flag beats its [VARIABLE].",
    )
    groups: dict[str, argparse._ArgumentGroup] = {}
    for flag in _SERVE_FLAGS:
        if flag.group not in groups:
            groups[flag.group] = parser.add_argument_group(flag.group)
        keywords: dict[str, Any] = {
            "type": flag.convert,
            "action": flag.action,
            "choices": flag.choices,
            "nargs": flag.nargs,
            "metavar": SERVE_METAVARS.get(flag.dest),
        }
        given = {key: value for key, value in keywords.items() if value is not None}
        action = groups[flag.group].add_argument(
            *flag.spellings, dest=flag.dest, default=_default(flag), **given
        )
        action.help = flag_help(flag.dest, action.default)
    add_model_flags(parser)
    add_shortcut_flags(parser)
    add_no_effect_flags(parser)
    return parser
