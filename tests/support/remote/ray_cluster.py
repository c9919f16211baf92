"""A real Ray cluster on this machine, on loopback only, for the cluster's end-to-end tests.

Outside a network namespace Ray binds the machine's own address whatever ``--node-ip-address``
says, so the cluster, the router and its workers all run in a namespace of their own that has
only ``lo`` (root: ``unshare(CLONE_NEWNET)``). The namespace is the calling *thread's*: this
test's thread enters it, so that every process it starts afterwards (``ray start``, the router,
the workers) and every socket it opens is in it, and leaves it at the end.

Each node is one ``ray start --block`` in a session of its own, with one CPU, a custom resource
naming it (``corral:NAME``, router/cluster/nodes.py) and worker ports of its own, away from
10002-19999 where tests' servers listen. Stopping kills every process of each node's tree by
pid: never ``ray stop``, which would stop any Ray on the machine.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest

__all__ = ["RayCluster", "loopback_cluster", "loopback_namespace"]

_CLONE_NEWNET = 0x40000000
_RAY = str(Path(sys.executable).with_name("ray"))
_GCS_PORT = 6390
_WORKER_PORTS = 21000  # each node takes 200 from here


@contextmanager
def loopback_namespace() -> Iterator[None]:
    """Run the calling thread in a new network namespace with only ``lo``, up; raises
    PermissionError where namespaces cannot be made (not root)."""
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(_CLONE_NEWNET) != 0:
            raise PermissionError(ctypes.get_errno(), "unshare(CLONE_NEWNET) failed")
        try:
            subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
            yield
        finally:
            if libc.setns(own, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "could not return to the first namespace")
    finally:
        os.close(own)


@contextmanager
def loopback_cluster(scratch: Path) -> Iterator[RayCluster]:
    """A cluster to add nodes to, in a loopback-only namespace that this thread enters, every
    process of it killed at the end. Without root (no namespace) the test is skipped, except
    in CI (``CI=true``), where that fails."""
    try:
        namespace = loopback_namespace()
        namespace.__enter__()
    except PermissionError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no network namespace for the test cluster (needs root): {exc}")
    cluster = RayCluster(scratch)
    try:
        yield cluster
    finally:
        cluster.stop()
        namespace.__exit__(None, None, None)


class RayCluster:
    def __init__(self, scratch: Path) -> None:
        # Ray's socket paths must fit 107 bytes: pytest's own temp paths (popen-gw1/...) are
        # too long under xdist, as in CI, so Ray gets a short folder of its own in /tmp.
        self._temp = Path(tempfile.mkdtemp(prefix="corral-ray-", dir="/tmp"))
        self._logs = scratch
        self._nodes: list[subprocess.Popen[bytes]] = []
        self._names: list[str] = []
        self.address = f"127.0.0.1:{_GCS_PORT}"

    def add_node(self, name: str, env: Mapping[str, str] | None = None) -> None:
        """The head first, then the others; ``env``: the node's own (its agent reads it)."""
        first = _WORKER_PORTS + 200 * len(self._nodes)
        where = (
            [
                "--head",
                f"--port={_GCS_PORT}",
                "--include-dashboard=false",
                f"--temp-dir={self._temp}",
            ]
            if not self._nodes
            else [f"--address={self.address}"]
        )
        command = [
            _RAY, "start", "--block", *where, "--node-ip-address=127.0.0.1", "--num-cpus=1",
            f"--resources={json.dumps({f'corral:{name}': 1})}",
            f"--min-worker-port={first}", f"--max-worker-port={first + 199}",
            "--disable-usage-stats",
        ]  # fmt: skip
        log = self._logs / f"{name}.log"  # ray start's own words
        with log.open("wb") as out:
            self._nodes.append(
                subprocess.Popen(
                    command,
                    env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(env or {})},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        self._names.append(name)
        # One node at a time: nodes starting together on a busy machine time out.
        _wait_for_text(log, "Ray runtime started", self._nodes[-1])

    def wait_for_nodes(self, count: int, timeout: float = 120.0) -> None:
        """Until ``count`` nodes are alive, asked of the cluster by a driver of its own."""
        script = (
            "import ray, time, sys\n"
            f"ray.init(address={self.address!r}, log_to_driver=False)\n"
            f"deadline = time.monotonic() + {timeout}\n"
            f"while sum(n['Alive'] for n in ray.nodes()) < {count}:\n"
            "    if time.monotonic() > deadline: sys.exit('nodes missing')\n"
            "    time.sleep(0.2)\n"
        )
        subprocess.run([sys.executable, "-c", script], check=True, timeout=timeout + 30)

    def kill_node(self, name: str) -> None:
        """The node dies at once, as a machine that loses power: every process of its tree
        (its raylet, Ray's workers, its node agent, the Corral workers that agent started)."""
        _kill_trees([self._nodes[self._names.index(name)]])

    def stop(self) -> None:
        """Kill every process of every node's tree (raylets, GCS, Ray's workers, the node
        agents and the Corral workers they started), by pid."""
        _kill_trees(self._nodes)
        shutil.rmtree(self._temp, ignore_errors=True)


def _kill_trees(nodes: list[subprocess.Popen[bytes]]) -> None:
    processes: list[psutil.Process] = []
    for node in nodes:
        try:
            root = psutil.Process(node.pid)
            processes += [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    for process in processes:
        with suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGKILL)
    psutil.wait_procs(processes, timeout=10)
    for node in nodes:
        node.wait(timeout=10)


def _wait_for_text(log: Path, text: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120.0
    while text not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"ray start failed: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
