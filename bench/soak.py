"""Long mixed load on a real router, watching for leaks: ``python -m bench.soak [--minutes N]``.

Three tiny random-weight models behind ``--models-max 2`` (so requests keep swapping them),
and a local stand-in for the hub (``HF_ENDPOINT``) for downloads. Client threads pick, with a
fixed seed, among: a stream read to its end, a stream cancelled after its first event, a
resumed stream (``X-Conversation-Id``, dropped, then replayed from ``GET /v1/stream``), a bad
body (malformed JSON, an unknown model, a body over ``--max-body``), an explicit unload, and
now and then a download of a tiny repository followed by its removal.

Every ``--sample-seconds`` the router's RSS, open file descriptors, threads and child processes
are sampled; the end prints each one's least-squares slope per hour with its first and last
values, the counts of what was done, and whether every worker and download child is gone once
the router has stopped. Every error is explained by its cause (``bench/soak_causes.py``): each
answer that is not a 2xx, each SSE error event and each worker exit the router logs as an error;
the report counts them per cause. Everything talks to 127.0.0.1; every loop is bounded. A
measurement, not a test: it exits 1 when an error is unexplained or a process was left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from bench.proxy_overhead import Router, log
from bench.soak_causes import classify
from tests.support.fakes.fake_hub import FakeHub
from tests.support.files.tiny_gguf import write_tiny_gguf

MODELS = ("soak-a", "soak-b", "soak-c")
REPO = "acme/soak-GGUF"
DOWNLOADED = f"{REPO}:Q4_K_M"
MAX_BODY = 1 << 20
SERVE_ARGS = ["--models-max", "2", "--ctx-size", "256", "--max-body", "1M"]
# (action, weight): mostly streams, as a chat front end would send.
ACTIONS = [
    ("stream", 6),
    ("cancel", 3),
    ("resume", 2),
    ("bad_body", 2),
    ("unload", 1),
]
DOWNLOAD_EVERY_SECONDS = 60.0
REQUEST_TIMEOUT = 120.0
DOWNLOAD_WAIT_POLLS = 600  # x 0.2 s: the longest a tiny download may take before giving up


@dataclass
class Sample:
    at: float
    rss: int
    fds: int
    threads: int
    children: int


# An answer's status (or the name of the httpx error, or "sse" for an SSE error event in a 200)
# and its error message ("" when it has none).
Outcome = tuple[int | str, str]
UNEXPLAINED_SHOWN = 10  # examples the report prints


@dataclass
class Tally:
    done: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    causes: Counter[str] = field(default_factory=Counter)
    unexplained: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, action: str, *answers: tuple[str, Outcome]) -> None:
        """One action done, with each answer it got as (what was asked, its outcome)."""
        with self.lock:
            self.done[action] += 1
            for kind, outcome in answers:
                self.explain(kind, outcome)

    def explain(self, kind: str, outcome: Outcome) -> None:
        status, message = outcome
        self.statuses[f"{kind}:{status}"] += 1
        if isinstance(status, int) and 200 <= status < 300:
            return
        cause = classify(kind, status, message)
        if cause is not None:
            self.causes[cause.name] += 1
        else:
            self.unexplained.append(f"{kind}:{status} {message}")


def _chat(model: str, stream: bool = True) -> dict[str, object]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": "Count from 1 to 50."}],
        "max_tokens": 16,
        "stream": stream,
    }


def _error_message(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body[:200].decode(errors="replace")


def _read(answer: httpx.Response, events: int | None) -> Outcome:
    """Read ``events`` SSE lines (None: all) of an answer, watching for an error event."""
    if not answer.is_success:
        return answer.status_code, _error_message(answer.read())
    for index, line in enumerate(answer.iter_lines()):
        if line.startswith('data: {"error"'):
            return "sse", _error_message(line.removeprefix("data: ").encode())
        if events is not None and index >= events:
            break
    return answer.status_code, ""


def _stream(
    client: httpx.Client, model: str, events: int | None, conversation: str = ""
) -> Outcome:
    """POST a chat stream; read ``events`` SSE lines (None: all) and drop the connection."""
    headers = {"X-Conversation-Id": conversation} if conversation else {}
    with client.stream("POST", "/v1/chat/completions", json=_chat(model), headers=headers) as r:
        return _read(r, events)


def _resume(client: httpx.Client, model: str, conversation: str) -> list[tuple[str, Outcome]]:
    """A session stream dropped after its first line, then replayed: both answers count."""
    posted = _stream(client, model, 1, conversation)
    params: dict[str, str | int] = {"conv_id": conversation, "from": 0}
    with client.stream("GET", "/v1/stream", params=params) as r:
        return [("resume", posted), ("replay", _read(r, None))]


def _bad_body(client: httpx.Client, rng: random.Random) -> Outcome:
    kind = rng.choice(["json", "model", "size"])
    if kind == "json":
        body = b'{"model": "soak-a", "messages": ['
    elif kind == "model":
        body = b'{"model": "no-such-model", "messages": []}'
    else:
        body = b" " * (MAX_BODY + 1)
    answer = client.post("/v1/chat/completions", content=body)
    return answer.status_code, _error_message(answer.content)


def _worker(url: str, seed: int, deadline: float, tally: Tally, stop: threading.Event) -> None:
    rng = random.Random(seed)
    names = [name for name, _ in ACTIONS]
    weights = [weight for _, weight in ACTIONS]
    serial = 0
    with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT) as client:
        while time.monotonic() < deadline and not stop.is_set():
            action = rng.choices(names, weights)[0]
            model = rng.choice(MODELS)
            answers: list[tuple[str, Outcome]]
            try:
                if action == "stream":
                    answers = [(action, _stream(client, model, None))]
                elif action == "cancel":
                    answers = [(action, _stream(client, model, 1))]
                elif action == "resume":
                    serial += 1
                    answers = _resume(client, model, f"soak-{seed}-{serial}")
                elif action == "bad_body":
                    answers = [(action, _bad_body(client, rng))]
                else:
                    answer = client.post("/models/unload", json={"model": model})
                    answers = [(action, (answer.status_code, _error_message(answer.content)))]
            except httpx.HTTPError as exc:
                answers = [(action, (type(exc).__name__, str(exc)))]
            tally.count(action, *answers)


def _download_once(client: httpx.Client, tally: Tally) -> None:
    started = client.post("/models", json={"model": DOWNLOADED})
    if started.status_code != 200:
        tally.count("download", ("download", (started.status_code, started.text[:200])))
        return
    status: int | str = "timeout"
    for _ in range(DOWNLOAD_WAIT_POLLS):
        listed = {e["id"]: e for e in client.get("/models").json()["data"]}
        entry = listed.get(DOWNLOADED)
        if entry is not None and entry["status"].get("failed"):
            status = "failed"
            client.delete("/models", params={"model": DOWNLOADED})  # drop the failed job
            break
        if entry is not None and entry["status"]["value"] not in ("downloading", "downloaded"):
            status = client.delete("/models", params={"model": DOWNLOADED}).status_code
            break
        time.sleep(0.2)
    tally.count("download", ("download", (status, "")))


def _downloader(url: str, deadline: float, tally: Tally, stop: threading.Event) -> None:
    with httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT) as client:
        while time.monotonic() < deadline and not stop.is_set():
            try:
                _download_once(client, tally)
            except httpx.HTTPError as exc:
                tally.count("download", ("download", (type(exc).__name__, str(exc))))
            stop.wait(min(DOWNLOAD_EVERY_SECONDS, max(0.0, deadline - time.monotonic())))


def _sample(process: psutil.Process, started: float, seen: set[int]) -> Sample:
    children = process.children(recursive=True)
    seen.update(child.pid for child in children)
    return Sample(
        at=time.monotonic() - started,
        rss=process.memory_info().rss,
        fds=process.num_fds(),
        threads=process.num_threads(),
        children=len(children),
    )


def _slope_per_hour(samples: list[Sample], name: str) -> float:
    if len(samples) < 2:
        return 0.0
    xs = [s.at / 3600 for s in samples]
    ys = [float(getattr(s, name)) for s in samples]
    return statistics.linear_regression(xs, ys).slope


def report(samples: list[Sample], tally: Tally, minutes: float, left: list[int]) -> None:
    print(f"soak: {minutes:g} min, {len(samples)} samples, models {', '.join(MODELS)}, "
          f"corral serve {' '.join(SERVE_ARGS)}")  # fmt: skip
    print(f"{'metric':<10} {'first':>12} {'last':>12} {'max':>12} {'slope/hour':>14}")
    for name, scale, unit in [
        ("rss", 1 << 20, "MiB"),
        ("fds", 1, ""),
        ("threads", 1, ""),
        ("children", 1, ""),
    ]:
        values = [getattr(s, name) / scale for s in samples]
        slope = _slope_per_hour(samples, name) / scale
        print(
            f"{name + (' ' + unit if unit else ''):<10} {values[0]:>12.1f} {values[-1]:>12.1f} "
            f"{max(values):>12.1f} {slope:>+14.2f}"
        )
    print("done: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.done.items())))
    print("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.statuses.items())))
    print("errors by cause:")
    for cause, count in tally.causes.most_common():
        print(f"{count:>8}  {cause}")
    print(f"{len(tally.unexplained):>8}  unexplained")
    for example in tally.unexplained[:UNEXPLAINED_SHOWN]:
        print(f"          {example}")
    print(f"processes left after the router stopped: {left or 'none'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=30.0, help="how long to load (30)")
    parser.add_argument("--clients", type=int, default=3, help="client threads (3)")
    parser.add_argument("--sample-seconds", type=float, default=10.0, help="sampling period (10)")
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="corral-soak-") as tmp, FakeHub() as hub:
        home = Path(tmp)
        models_dir = home / "models"
        models_dir.mkdir()
        for seed, name in enumerate(MODELS):
            write_tiny_gguf(models_dir / f"{name}.gguf", name=name, seed=seed)
        payload = write_tiny_gguf(home / "tiny.gguf", seed=9).read_bytes()
        hub.add_repo(REPO, {"soak-Q4_K_M.gguf": payload})
        hub.release()
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(home / "hub"), "HF_HOME": str(home)}
        with _environment(env):
            router = Router(models_dir, SERVE_ARGS)
        process = psutil.Process(router.process.pid)
        tally, stop, seen = Tally(), threading.Event(), set[int]()
        started = time.monotonic()
        deadline = started + args.minutes * 60
        threads = [
            threading.Thread(
                target=_worker, args=(router.url, args.seed + i, deadline, tally, stop)
            )
            for i in range(args.clients)
        ]
        threads.append(
            threading.Thread(target=_downloader, args=(router.url, deadline, tally, stop))
        )
        samples = [_sample(process, started, seen)]
        try:
            for thread in threads:
                thread.start()
            while time.monotonic() < deadline:
                stop.wait(min(args.sample_seconds, max(0.0, deadline - time.monotonic())))
                samples.append(_sample(process, started, seen))
                last = samples[-1]
                done = sum(tally.done.values())
                log(f"{last.at:7.0f}s rss {last.rss >> 20} MiB, fds {last.fds}, threads "
                    f"{last.threads}, children {last.children}, done {done}")  # fmt: skip
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=REQUEST_TIMEOUT)
            left = router.stop()
            left += [pid for pid in seen if psutil.pid_exists(pid) and _alive(pid)]
            for record in router.failed_exits:  # graceful exits are logged at info
                tally.explain("worker_exit", (str(record.get("code")), str(record.get("reason"))))
    report(samples, tally, args.minutes, sorted(set(left)))
    sys.exit(1 if left or tally.unexplained else 0)


def _alive(pid: int) -> bool:
    with contextlib.suppress(psutil.NoSuchProcess):
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    return False


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """The router inherits this process's environment: set the hub's variables around its start."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


if __name__ == "__main__":
    main()
