"""A real ``corral serve`` process for end-to-end tests.

The router is started with ``--port 0`` and reports the address it bound in its first log line,
so tests never race for a port. Its stderr (JSON log records) is collected for assertions and
for debugging a failing test.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

__all__ = ["RouterProcess", "running_router"]


# The developer's own model cache and llama-server settings must not reach a test's router.
_FOREIGN_ENV_PREFIXES = ("LLAMA_ARG_", "LLAMA_API_KEY", "LLAMA_CACHE", "HF_", "HUGGINGFACE_")
_REPOSITORY = Path(__file__).resolve().parents[2]
# The checkout's own router; tests of an installed copy pass that copy's `corral` script instead.
_FROM_CHECKOUT = (sys.executable, "-m", "router")


def _hermetic_env(extra: dict[str, str] | None, scratch: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_ENV_PREFIXES)}
    env["HF_HUB_CACHE"] = os.path.join(scratch, "hub")  # unless the test brings its own cache
    os.makedirs(env["HF_HUB_CACHE"], exist_ok=True)
    # Saved KV caches land in this router's own scratch folder: a test never restores a cache
    # another test left, nor fills the developer's.
    env["XDG_CACHE_HOME"] = os.path.join(scratch, "cache")
    # Nothing a test starts may reach the real hub: a download without the test's fake hub
    # fails at once on this closed port (the discard port) rather than going online.
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    # A worker handed over from a spare keeps the spare's command line (no --alias to find it
    # by), and every router's spare costs the suite a process: tests that want one ask for it.
    env["CORRAL_MODELS_SPARE"] = "0"
    return {**env, **(extra or {})}


class RouterProcess:
    def __init__(
        self,
        args: Sequence[str],
        env: dict[str, str] | None = None,
        *,
        command: Sequence[str] = _FROM_CHECKOUT,
        cwd: Path = _REPOSITORY,
        verify: ssl.SSLContext | bool = True,  # how the client checks an https router
    ) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="corral-router-")
        self.process = subprocess.Popen(
            [*command, "serve", "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=_hermetic_env(env, self._scratch.name),
            cwd=cwd,
        )
        self.records: list[dict[str, Any]] = []
        self._logged = threading.Condition()
        self._listening = threading.Event()
        self.url = ""
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        if not self._listening.wait(timeout=60) or not self.url:
            self.stop()
            raise RuntimeError(f"router did not start: {self.log_text()}")
        self.client = httpx.Client(base_url=self.url, timeout=60, verify=verify)

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            try:
                record = json.loads(raw)
            except ValueError:
                record = {"event": raw.decode(errors="replace").rstrip()}
            with self._logged:
                self.records.append(record)
                self._logged.notify_all()
            if record.get("event") == "corral listening":
                self.url = str(record["url"])
                self._listening.set()
        self._listening.set()  # exited before listening: unblock the constructor

    def wait_for_log(self, event: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        """The first log record with this event (and these fields), waiting for it to appear."""

        def find() -> dict[str, Any] | None:
            return next(
                (
                    r
                    for r in self.records
                    if r.get("event") == event and all(r.get(k) == v for k, v in fields.items())
                ),
                None,
            )

        with self._logged:
            assert self._logged.wait_for(lambda: find() is not None, timeout), (
                f"no log record {event!r} {fields}"
            )
        record = find()
        assert record is not None
        return record

    def wait_for_record(
        self, matches: Callable[[dict[str, Any]], bool], timeout: float = 30.0
    ) -> dict[str, Any]:
        """The first log record ``matches`` accepts, waiting for it to appear."""
        with self._logged:
            assert self._logged.wait_for(lambda: any(map(matches, self.records)), timeout), (
                "no such log record"
            )
            return next(r for r in self.records if matches(r))

    def log_text(self) -> str:
        return "\n".join(json.dumps(record) for record in self.records)

    def models(self) -> dict[str, dict[str, Any]]:
        data = self.client.get("/models").raise_for_status().json()["data"]
        return {entry["id"]: entry for entry in data}

    def worker_pids(self) -> dict[str, int]:
        """Each running model's worker process, by the name the router gave it (``--alias``)."""
        pids = {}
        for child in psutil.Process(self.process.pid).children():
            try:
                argv = child.cmdline()
            except psutil.Error:
                continue  # exited meanwhile (or a zombie): no worker of a running model
            if "--alias" in argv:
                pids[argv[argv.index("--alias") + 1]] = child.pid
        return pids

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        finally:
            self._reader.join(timeout=30)
            if self.process.stderr is not None:
                self.process.stderr.close()
            if hasattr(self, "client"):
                self.client.close()
            self._scratch.cleanup()


@contextmanager
def running_router(
    args: Sequence[str],
    env: dict[str, str] | None = None,
    *,
    command: Sequence[str] = _FROM_CHECKOUT,
    cwd: Path = _REPOSITORY,
    verify: ssl.SSLContext | bool = True,
) -> Iterator[RouterProcess]:
    router = RouterProcess(args, env, command=command, cwd=cwd, verify=verify)
    try:
        yield router
    finally:
        router.stop()
