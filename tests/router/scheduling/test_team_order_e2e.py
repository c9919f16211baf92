"""The key file's ``class=`` through a real router and worker (docs/serving.md, "Scheduling"):
with one slot taken, an interactive request that came after a batch one gets the slot first,
and ``/models``, ``/metrics`` and ``corral ps`` show who waits and why meanwhile; two keys of
one class share the slot by the tokens their answers counted, not by requests; a batch burst
on a third model, which yields its place to a person's model, is served in full when it loads
again (issue 51).

``LLAMA_SERVER_DEBUG_FAKE_TIMING`` holds each request 2 s on its slot, as upstream's tests use
it, so the queue is there to be seen without racing a tiny model's answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from router.cli.commands import run_cache_command
from router.security.api_keys import key_id
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.router_process import RouterProcess, running_router

INTERACTIVE, BATCH = "team-chat-key-0001", "team-batch-key-0002"
ADMIN = "team-admin-key-0003"  # reads the queue: an inference key is not told the other keys
BOB = "team-chat-key-0004"  # a second person
KEYS = f"{INTERACTIVE} inference\n{BATCH} inference class=batch\n{ADMIN} admin\n{BOB} inference\n"


@pytest.fixture(scope="module")
def team(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    keys = tmp_path_factory.mktemp("classes") / "keys.txt"
    keys.write_text(KEYS)
    args = ["--models-dir", str(models_dir), "--ctx-size", "256", "--parallel", "1"]
    # The line's order for a slot is what is shown: no courtesy slot lets a request past it
    # (test_courtesy_slot_e2e.py shows that one).
    args.append("--no-courtesy-slot")
    env = {"LLAMA_SERVER_DEBUG_FAKE_TIMING": "1"}
    with running_router([*args, "--api-key-file", str(keys)], env) as router:
        router.client.headers["Authorization"] = f"Bearer {ADMIN}"
        yield router


def _chat(
    router: RouterProcess,
    key: str,
    done: list[str],
    tag: str,
    model: str = "alpha",
    prompt: str = "hi",
) -> None:
    with openai.OpenAI(base_url=f"{router.url}/v1", api_key=key, max_retries=0) as client:
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], max_tokens=2
        )
    done.append(tag)


def _waiting(router: RouterProcess, count: int) -> dict[str, object]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        queue = router.models()["alpha"].get("queue")
        if isinstance(queue, dict) and queue["waiting"] == count:
            return queue
        time.sleep(0.05)
    raise AssertionError(f"never {count} waiting: {router.models()['alpha']}")


def test_interactive_goes_before_batch_and_the_queue_shows_it(
    team: RouterProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    done: list[str] = []
    threads = [
        threading.Thread(target=_chat, args=(team, key, done, tag))
        for key, tag in ((BATCH, "batch first"), (BATCH, "batch second"), (INTERACTIVE, "chat"))
    ]
    threads[0].start()
    _waiting_for_slot(team)
    threads[1].start()
    _waiting(team, 1)
    threads[2].start()
    queue = _waiting(team, 2)

    assert queue["reason"] == "busy"
    assert queue["classes"] == {"batch": 1, "interactive": 1}
    assert queue["keys"] == {key_id(BATCH): 1, key_id(INTERACTIVE): 1}
    metrics = team.client.get("/metrics").text
    assert 'corral_queue_waiting{model="alpha",class="batch"} 1' in metrics
    assert f'corral_queue_waiting_by_key{{model="alpha",key="{key_id(BATCH)}"}} 1' in metrics
    assert 'corral_queue_waiting_reason{model="alpha",reason="busy"} 1' in metrics
    # An inference key sees the queue but not which keys wait in it, as in /models.
    seen = team.client.get("/metrics", headers={"Authorization": f"Bearer {INTERACTIVE}"}).text
    assert 'corral_queue_waiting{model="alpha",class="batch"} 1' in seen
    assert "corral_queue_waiting_by_key" not in seen
    assert key_id(BATCH) not in seen
    assert run_cache_command("ps", ["--url", team.url, "--api-key", ADMIN]) == 0
    ps = capsys.readouterr().out
    assert "QUEUED FOR" in ps
    assert "busy" in ps
    assert "batch 1, interactive 1" in ps

    for thread in threads:
        thread.join(timeout=60)
    assert done == ["batch first", "chat", "batch second"]
    assert "queue" not in team.models()["alpha"]


def test_keys_share_the_slot_by_tokens_not_by_requests(team: RouterProcess) -> None:
    """Alice's long prompt holds the slot while two of hers and two of bob's short ones wait:
    once its tokens are counted (from its answer's usage, when it ends), bob's two go before
    alice's next, where turns by request would have alternated (docs/serving.md, *Fair share,
    by tokens*)."""
    words = "the of and to in is you that it he was for on are as with his they at be this"
    done: list[str] = []
    sends = [
        (INTERACTIVE, "alice long", " ".join([words] * 6)),
        (INTERACTIVE, "alice", f"{words} one"),
        (INTERACTIVE, "alice", f"{words} two"),
        (BOB, "bob", "hi one"),
        (BOB, "bob", "hi two"),
    ]
    threads = [
        threading.Thread(target=_chat, args=(team, key, done, tag, "alpha", prompt))
        for key, tag, prompt in sends
    ]
    threads[0].start()
    _waiting_for_slot(team)
    for waiting, thread in enumerate(threads[1:], start=1):
        thread.start()
        _waiting(team, waiting)
    for thread in threads:
        thread.join(timeout=60)
    assert done == ["alice long", "bob", "bob", "alice", "alice"]


def _waiting_for_slot(router: RouterProcess) -> None:
    """The first batch request holds the one slot (once its model has loaded)."""
    deadline = time.monotonic() + 30
    pattern = 'corral_active_requests{model="alpha"} 1'
    while pattern not in router.client.get("/metrics").text:
        assert time.monotonic() < deadline, "the first request never reached the worker"
        time.sleep(0.05)


def test_a_request_that_waited_is_logged_with_its_key_and_class(team: RouterProcess) -> None:
    """Each request here waits (the debug hold keeps it 2 s before its worker is asked): the
    router logs the wait with the key's id and class (router/observe/waits.py)."""
    _chat(team, BATCH, [], "batch")
    line = team.wait_for_log("request waited", model="alpha", key=key_id(BATCH), klass="batch")
    assert isinstance(line["waited_s"], float)


def test_a_batch_burst_on_a_third_model_is_served_while_people_take_turns(
    tmp_path: Path,
) -> None:
    """Three models, room for two, a burst of batch requests waiting for gamma's one slot; bob
    on beta, then alice on alpha: gamma, only batch's, yields its place to alice's model and is
    stopped with the burst still waiting. Every request is answered: the burst waits for
    gamma's next load (it was answered 503 "stopped before it finished loading")."""
    for seed, name in enumerate(("alpha", "beta", "gamma")):
        write_tiny_gguf(tmp_path / f"{name}.gguf", name=name, seed=seed)
    (tmp_path / "keys.txt").write_text(KEYS)
    args = ["--models-dir", str(tmp_path), "--api-key-file", str(tmp_path / "keys.txt")]
    args += ["--ctx-size", "256", "--parallel", "1", "--models-max", "2"]
    # Past the bound the burst would go first and gamma keep its place: alice comes before.
    args += ["--schedule-wait-max", "6"]
    env = {"LLAMA_SERVER_DEBUG_FAKE_TIMING": "1"}  # each load and request holds 2 s
    done: list[str] = []
    with running_router(args, env) as router, ThreadPoolExecutor(3) as burst:
        router.client.headers["Authorization"] = f"Bearer {ADMIN}"
        _chat(router, BOB, done, "bob", "beta")
        answers = [burst.submit(_chat, router, BATCH, done, "batch", "gamma") for _ in range(3)]
        _gamma_busy_with_a_backlog(router)
        _chat(router, INTERACTIVE, done, "alice", "alpha")  # gamma yields its place
        _chat(router, BOB, done, "bob", "beta")
        for answer in answers:
            answer.result(timeout=120)  # raises the request's error, if it failed
        assert router.wait_for_log("evicting idle model", model="gamma")["waiting"] > 0
    assert sorted(done) == ["alice", "batch", "batch", "batch", "bob", "bob"]


def _gamma_busy_with_a_backlog(router: RouterProcess) -> None:
    """gamma loaded, one batch request on its slot and two more waiting for it."""
    deadline = time.monotonic() + 60
    while True:
        gamma = router.models()["gamma"]
        queue = gamma.get("queue")
        loaded = gamma["status"]["value"] == "loaded"
        if loaded and isinstance(queue, dict) and queue["waiting"] >= 2:
            return
        assert time.monotonic() < deadline, f"gamma never busy with a backlog: {gamma}"
        time.sleep(0.05)
