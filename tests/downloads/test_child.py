"""``python -m downloads`` as a process: what it says on stdout, and how it ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from corral.children.download_payloads import (
    DownloadOutcome,
    DownloadProgress,
    decode_download_payload,
)
from corral.children.protocol import LineSplitter, StateMessage, parse_line
from tests.support.fakes.fake_hub import FakeHub

REPO = "acme/tiny-GGUF"


def run_child(hub: FakeHub, cache: Path, reference: str) -> tuple[int, list[StateMessage], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(cache.parent / "hf-home"))
    env.pop("CORRAL_ROUTER_PID", None)  # run by hand: no lifeline
    done = subprocess.run(
        [sys.executable, "-m", "downloads", reference, "--cache-dir", str(cache)],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    states = [
        line
        for raw in LineSplitter().feed(done.stdout)
        if isinstance(line := parse_line(raw), StateMessage)
    ]
    return done.returncode, states, done.stderr.decode()


def test_progress_then_finished_on_the_protocol_stream(
    hub: FakeHub, cache: Path, gguf_bytes: list[bytes]
) -> None:
    commit = hub.add_repo(REPO, {"m-Q8_0.gguf": gguf_bytes[0]})
    code, states, log = run_child(hub, cache, f"{REPO}:q8_0")

    assert code == 0, log
    assert {state.state for state in states} == {"downloading"}
    messages = [decode_download_payload(state.payload) for state in states]
    assert messages[-1] == DownloadOutcome("download_finished", None, f"{REPO}:Q8_0")
    progress = [m for m in messages[:-1] if isinstance(m, DownloadProgress)]
    assert len(progress) == len(messages) - 1
    assert progress[0] == DownloadProgress(
        f"{hub.url}/{REPO}/resolve/{commit}/m-Q8_0.gguf",
        0,
        len(gguf_bytes[0]),
        f"{REPO}:Q8_0",
        "m-Q8_0.gguf",
    )
    assert progress[-1].downloaded == len(gguf_bytes[0])


def test_a_failure_is_reported_with_its_reason(hub: FakeHub, cache: Path) -> None:
    code, states, _ = run_child(hub, cache, "acme/missing")
    assert code == 1
    assert [decode_download_payload(state.payload) for state in states] == [
        DownloadOutcome("download_failed", "repository 'acme/missing' not found on the hub "
                        "(if it is private, set HF_TOKEN or --hf-token)")
    ]  # fmt: skip
