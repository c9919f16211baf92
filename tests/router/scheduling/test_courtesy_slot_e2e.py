"""The courtesy slot through a real router and worker (docs/serving.md, "Scheduling"): with
``--parallel 2`` and a heavy key streaming long answers on both slots, a light key's request
gets its first token while both heavy answers still run, where it used to wait for one of them
to end (issue 51's ``fair`` trace); the worker still shows the two slots asked for."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai

from tests.support.router_process import RouterProcess, running_router

HEAVY, LIGHT, ADMIN = "fair-heavy-key-0001", "fair-light-key-0002", "fair-admin-key-0003"
KEYS = f"{HEAVY} inference\n{LIGHT} inference\n{ADMIN} admin\n"
# Each heavy answer is thousands of decode steps; the light one needs a few.
LONG, SHORT = 3000, 4


def _stream(
    router: RouterProcess, key: str, tokens: int, tag: str, events: list[str], lock: threading.Lock
) -> None:
    """One streamed chat; ``events`` gets "<tag> first" at its first chunk, "<tag> ended" once
    the stream is done."""
    with openai.OpenAI(base_url=f"{router.url}/v1", api_key=key, max_retries=0) as client:
        stream = client.chat.completions.create(
            model="alpha",
            messages=[{"role": "user", "content": f"tell {tag} a story"}],
            max_tokens=tokens,
            stream=True,
            extra_body={"ignore_eos": True},
        )
        for i, _ in enumerate(stream):
            if i == 0:
                with lock:
                    events.append(f"{tag} first")
    with lock:
        events.append(f"{tag} ended")


def _all_in(events: list[str], lock: threading.Lock, *wanted: str) -> bool:
    with lock:
        return all(event in events for event in wanted)


def test_a_light_key_gets_its_first_token_while_a_heavy_key_holds_every_slot(
    models_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "keys.txt").write_text(KEYS)
    args = ["--models-dir", str(models_dir), "--api-key-file", str(tmp_path / "keys.txt")]
    args += ["--ctx-size", "8192", "--parallel", "2"]
    events: list[str] = []
    lock = threading.Lock()
    with running_router(args) as router, ThreadPoolExecutor(2) as heavy:
        router.client.headers["Authorization"] = f"Bearer {ADMIN}"
        answers = [
            heavy.submit(_stream, router, HEAVY, LONG, f"heavy {i}", events, lock) for i in (0, 1)
        ]
        # Both heavy answers stream: the two slots are the heavy key's.
        while not _all_in(events, lock, "heavy 0 first", "heavy 1 first"):
            for answer in answers:
                if answer.done():
                    answer.result()  # raises the request's error, if it failed
            with router.client.stream("GET", "/health"):  # paces the loop on a round trip
                pass
        _stream(router, LIGHT, SHORT, "light", events, lock)
        slots = router.client.get("/slots", params={"model": "alpha"})
        props = router.client.get("/props", params={"model": "alpha"})
        for answer in answers:
            answer.result(timeout=300)
    assert slots.status_code == 200, slots.text
    assert len(slots.json()) == 2  # the courtesy sequence is in no slot list
    assert props.json()["total_slots"] == 2
    light = events.index("light first")
    assert light < events.index("heavy 0 ended")
    assert light < events.index("heavy 1 ended")
