"""``python -m router.tools.mcp.orphan_guard COMMAND [ARG…]``: exec an MCP server that dies with the
router (docs/tools.md, MCP servers).

A server written against the SDK exits when its stdin closes, which a dead router's pipe does;
one that does not would be orphaned, so the kernel's parent-death signal is armed first. It
survives ``exec`` and fires when the router's spawning thread exits.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from corral.children.environment import ROUTER_PID_ENV

__all__: list[str] = []

_PR_SET_PDEATHSIG = 1
_COMMAND_NOT_RUN = 127  # what a shell reports for a command it could not run


def _main(argv: list[str]) -> None:
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    router_pid = os.environ.get(ROUTER_PID_ENV)
    if router_pid and os.getppid() != int(router_pid):  # the router died before the guard
        os._exit(_COMMAND_NOT_RUN)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"cannot run MCP server {argv[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(_COMMAND_NOT_RUN)


if __name__ == "__main__":
    _main(sys.argv[1:])
