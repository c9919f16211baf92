"""What a node agent changes in the router's worker command line, and what it reports as room
(router/cluster/agent.py, reports.py): the rest of the command is the router's, unchanged."""

from __future__ import annotations

import sys

from router.cluster.agent import node_argv
from router.cluster.reports import NodeReport
from router.workers.launcher import WORKER_COMMAND

G = 1 << 30


def test_the_worker_runs_on_the_nodes_python_and_listens_on_its_cluster_address() -> None:
    argv = [*WORKER_COMMAND, "--model", "/m/a.gguf", "--host", "127.0.0.1", "--port", "0"]
    argv[0] = "/elsewhere/python"  # the router's machine's interpreter
    assert node_argv(argv, "10.0.0.2") == [
        sys.executable, *WORKER_COMMAND[1:], "--model", "/m/a.gguf",
        "--host", "10.0.0.2", "--port", "0",
    ]  # fmt: skip


def test_a_node_offers_what_its_workers_hold_plus_what_is_available_up_to_its_limit() -> None:
    free = NodeReport("b", "10.0.0.2", 64 * G, 40 * G, None, 8 * G)
    assert free.capacity == 48 * G
    limited = NodeReport("b", "10.0.0.2", 64 * G, 40 * G, 16 * G, 8 * G)
    assert limited.capacity == 16 * G
