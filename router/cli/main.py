"""The ``corral`` command. Flags are spelled as llama-server's, with ``LLAMA_ARG_*`` fallbacks."""

from __future__ import annotations

import os
import sys

from corral.llama_build import version_line
from corral.options.flags import model_options_from
from router.cli.commands import CACHE_COMMANDS, run_cache_command
from router.cli.help import main_help, unknown_command
from router.cli.no_effect import no_effect_given
from router.cli.serve_flag import flag_values
from router.cli.serve_flags import SERVE_FLAGS, serve_parser
from router.security.api_keys import ApiKeyFileError
from router.settings import Given, ServeSettings, serve_settings
from router.tools.mcp.mcp_config import McpConfigError
from router.tools.toolbox import ToolChoiceError

__all__ = ["main", "parse_serve_args"]


def parse_serve_args(argv: list[str]) -> ServeSettings:
    """The settings from a loop over the flag rows (:mod:`router.cli.serve_flags`) and the named
    derivations of :mod:`router.settings`; anything wrong stops here with its message."""
    parser = serve_parser()
    args = parser.parse_args(argv)
    try:
        flags = flag_values(args, SERVE_FLAGS)
        options = model_options_from(args, parser)
        return serve_settings(Given(flags, options, no_effect_given(args, parser)))
    except (ValueError, ApiKeyFileError, McpConfigError, ToolChoiceError) as exc:
        parser.error(str(exc))


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(main_help(), file=sys.stdout if argv else sys.stderr)
        sys.exit(0 if argv else 2)
    if argv[0] == "--version":  # as `corral serve --version` (llama-server's flag) answers
        print(version_line())
        sys.exit(0)
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
