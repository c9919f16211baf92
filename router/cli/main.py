"""The ``corral`` command. Flags are spelled as llama-server's, with ``LLAMA_ARG_*`` fallbacks."""

from __future__ import annotations

import argparse
import os
import ssl
import sys
from pathlib import Path
from typing import Any

from corral.hub.cache_layout import locate_cache_dir
from corral.options.flags import model_options_from
from corral.options.table import OptionError, normalise_options, parse_size
from corral.options.text_files import json_object, text_or_file
from router.cli.commands import CACHE_COMMANDS, run_cache_command
from router.cli.help import main_help, unknown_command
from router.cli.no_effect import no_effect_given
from router.cli.serve_flags import serve_parser
from router.security.api_keys import ApiKeyFileError, load_api_keys, parse_list
from router.settings import ServeSettings
from router.single_model import cached_hub_file
from router.tools.mcp_config import McpConfigError, load_mcp_servers
from router.tools.toolbox import ToolChoiceError, choose_builtin_tools

__all__ = ["main", "parse_serve_args"]


def _flag_or_env(values: list[str] | None, name: str) -> list[str]:
    # Repeatable flags cannot take their default from the environment: argparse would append
    # the flag's values to it instead of replacing it.
    if values is not None:
        return values
    value = os.environ.get(name)
    return [value] if value else []


def parse_serve_args(argv: list[str]) -> ServeSettings:
    parser = serve_parser()
    args = parser.parse_args(argv)
    if args.models_dir is not None and not Path(args.models_dir).is_dir():
        parser.error(f"--models-dir {args.models_dir} is not a directory")
    for path in args.model_files:
        if not path.is_file():
            parser.error(f"-m {path}: no such file")
    try:
        api_keys = load_api_keys(
            _flag_or_env(args.api_keys, "LLAMA_API_KEY"),
            [Path(f) for f in _flag_or_env(args.api_key_files, "LLAMA_ARG_API_KEY_FILE")],
        )
    except ApiKeyFileError as exc:
        parser.error(str(exc))
    memory_max = 0
    if args.models_memory_max:
        try:
            memory_max = parse_size(args.models_memory_max)
        except ValueError as exc:
            parser.error(f"--models-memory-max: {exc}")
    try:
        max_body = parse_size(args.max_body)
    except ValueError as exc:
        parser.error(f"--max-body: {exc}")
    if max_body < 1:
        parser.error("--max-body must be at least 1 byte")
    timeouts = {"--stall-timeout": args.stall_timeout, "--load-timeout": args.load_timeout}
    for flag, value in timeouts.items():
        if value < 0:
            parser.error(f"{flag} must be 0 (never) or a number of seconds")
    if args.models_spare < 0:
        parser.error("--models-spare must be 0 (no spare worker) or a number of workers")
    if args.schedule_wait_max < 0:
        parser.error("--schedule-wait-max must be 0 (no bound) or a number of seconds")
    if args.max_queue < 0:
        parser.error("--max-queue must be 0 (no limit) or a number of requests")
    if args.max_connections < 0:
        parser.error("--max-connections must be 0 (no limit) or a number of connections")
    if args.models_preset is not None and not Path(args.models_preset).is_file():
        parser.error(f"--models-preset {args.models_preset}: no such file")
    hf_repos = tuple(_flag_or_env(args.hf_repos, "LLAMA_ARG_HF_REPO"))
    model_files: list[Path] = list(args.model_files)
    if args.hf_file:
        # As llama-server's --hf-file: that file of the one -hf repository, served as a file.
        if len(hf_repos) != 1:
            parser.error("--hf-file needs exactly one -hf REPO")
        path = cached_hub_file(locate_cache_dir(os.environ), hf_repos[0], args.hf_file)
        if path is None:
            parser.error(f"--hf-file {args.hf_file}: not in the hub cache for {hf_repos[0]}")
        model_files.append(path)
        hf_repos = ()
    single = (
        args.models_dir is None
        and args.models_preset is None
        and len(model_files) + len(hf_repos) == 1
    )
    tools = tuple(parse_list(args.tools or ""))
    try:
        choose_builtin_tools(tools, args.tools_allow_exec)
        mcp_servers = load_mcp_servers(args.mcp_servers_config, args.mcp_servers_json)
    except (ToolChoiceError, McpConfigError) as exc:
        parser.error(str(exc))
    if args.tools_root is not None and not Path(args.tools_root).is_dir():
        parser.error(f"--tools-root {args.tools_root} is not a directory")
    if args.static_path is not None and not args.static_path.is_dir():
        parser.error(f"--path {args.static_path} is not a directory")
    _check_tls(args.ssl_key_file, args.ssl_cert_file, parser)
    # Tools read and write files: only pages from this machine may call them, unless told.
    cors_default = "localhost" if tools or mcp_servers else "*"
    no_effect = no_effect_given(args, parser)
    model_options = _model_options(args, parser)
    if not single:
        # llama-server's router strips its own --alias too; several models take theirs from a
        # preset, so here the flags are noted like any other that does nothing.
        no_effect += tuple(f for f, v in (("--alias", args.alias), ("--tags", args.tags)) if v)
    return ServeSettings(
        host=args.host,
        port=args.port,
        models_dir=Path(args.models_dir) if args.models_dir else None,
        model_files=model_files,
        mmproj_file=Path(args.mmproj_file) if args.mmproj_file else None,
        models_max=args.models_max,
        models_spare=args.models_spare,
        models_memory_max=memory_max,
        models_autoload=args.models_autoload,
        models_preset=Path(args.models_preset) if args.models_preset else None,
        hf_repos=hf_repos,
        timeout=args.timeout,
        stall_timeout=args.stall_timeout,
        load_timeout=args.load_timeout,
        max_queue=args.max_queue,
        schedule=args.schedule,
        schedule_wait_max=args.schedule_wait_max,
        offline=args.offline,
        cache_dir=locate_cache_dir(os.environ),
        model_options=model_options,
        ui_settings=_ui_settings(model_options, parser),
        api_keys=api_keys,
        cors_origins=tuple(parse_list(args.cors_origins or cors_default)),
        allowed_hosts=tuple(parse_list(args.allowed_hosts or "")),
        hf_token=args.hf_token or os.environ.get("HF_TOKEN"),
        log_format=args.log_format,
        log_requests=args.log_requests,
        otel_endpoint=args.otel_endpoint,
        ui_mcp_proxy=args.ui_mcp_proxy,
        ui_mcp_proxy_private=args.ui_mcp_proxy_private,
        max_body=max_body,
        max_connections=args.max_connections,
        single_model=single,
        aliases=tuple(parse_list(args.alias or "")),
        tags=tuple(parse_list(args.tags or "")),
        no_effect_flags=no_effect,
        tools=tools,
        tools_root=Path(args.tools_root) if args.tools_root else None,
        tools_allow_exec=args.tools_allow_exec,
        mcp_servers=mcp_servers,
        # As llama-server, which prepends it to every route: "v2", "/v2" and "/v2/" are one.
        api_prefix="/" + args.api_prefix.strip("/") if args.api_prefix.strip("/") else "",
        static_path=args.static_path,
        reuse_port=args.reuse_port,
        ssl_key_file=args.ssl_key_file,
        ssl_cert_file=args.ssl_cert_file,
    )


def _ui_settings(options: dict[str, str], parser: argparse.ArgumentParser) -> dict[str, Any]:
    """``--ui-config`` (or its file), which the router's ``/props`` hands to the Web UI; the
    workers get the option too, for their own ``/props``."""
    try:
        text = text_or_file(options, "ui-config")
        return json_object(text, "ui-config") if text is not None else {}
    except OptionError as exc:
        parser.error(str(exc))


def _check_tls(key: Path | None, cert: Path | None, parser: argparse.ArgumentParser) -> None:
    """Both TLS files or neither, and a pair that loads: refused now, not at the first client."""
    if key is None and cert is None:
        return
    if key is None or cert is None:
        parser.error("--ssl-key-file and --ssl-cert-file go together")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        parser.error(f"--ssl-cert-file {cert} / --ssl-key-file {key}: {exc}")


def _model_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, str]:
    """The per-model flags; ``--mmproj-auto``/``--no-mmproj`` (a catalogue option, not a worker
    flag) beats its variable."""
    options = model_options_from(args, parser)
    auto = args.mmproj_auto or os.environ.get("LLAMA_ARG_MMPROJ_AUTO")
    if auto is not None:
        try:
            options |= normalise_options([("mmproj-auto", auto)], where="command line")
        except OptionError as error:
            parser.error(str(error))
    return options


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(main_help(), file=sys.stdout if argv else sys.stderr)
        sys.exit(0 if argv else 2)
    command, rest = argv[0], argv[1:]
    if command in CACHE_COMMANDS:
        sys.exit(run_cache_command(command, rest))
    if command == "rpc-server":
        # ggml's RPC server lives beside the worker's llama.cpp bindings (worker/rpc/server.py),
        # which the router never imports: the command becomes that process, signals and all.
        os.execv(sys.executable, [sys.executable, "-m", "worker.rpc", *rest])
    if command != "serve":
        unknown_command(command)
    from router.server import serve

    try:
        serve(parse_serve_args(rest))
    except KeyboardInterrupt:
        # uvicorn re-raises SIGINT after its graceful shutdown; the workers are already stopped.
        sys.exit(130)
