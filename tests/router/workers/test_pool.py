"""The worker pool: the one writer of model state, its claims, and the pieces it delegates to.

The table is read through read-only views; reload diffs and name lookups are plain functions.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from corral.children.worker_key import WORKER_KEY_ENV
from corral.http.errors import ApiError
from router.availability.catalogue_diff import carried_over, stale_models
from router.availability.errors import (
    AlreadyRunning,
    LoadFailed,
    LoadInterrupted,
    ModelNotFound,
    NoRoom,
    SchedulingError,
)
from router.catalogue.catalogue import Catalogue, CatalogueEntry
from router.scheduling.answers import api_error, scheduling_answered
from router.workers.launcher import worker_argv
from router.workers.lookup import find_model
from router.workers.model_state import ModelState, Status
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.scheduling_harness import harness

pytestmark = pytest.mark.anyio


def _entry(name: str, **settings: Any) -> CatalogueEntry:
    return replace(CatalogueEntry(name, Path(f"/models/{name}.gguf"), "models_dir"), **settings)


async def test_model_state_is_read_only_outside_the_pool() -> None:
    async with harness(models_max=0) as h:
        a = h.state("a")
        with pytest.raises(AttributeError):
            a.in_flight = 1  # type: ignore[misc]
        with pytest.raises(AttributeError):
            a.status = Status.LOADED  # type: ignore[misc]


async def test_only_a_serving_model_can_be_claimed() -> None:
    async with harness(models_max=0) as h:
        a = h.state("a")
        assert not h.pool.claim(a)  # unloaded: claiming never loads
        assert a.in_flight == 0
        await h.load("a")
        assert h.pool.claim(a)
        assert h.pool.claim(a)
        assert a.in_flight == 2
        h.pool.release(a)
        assert a.in_flight == 1
        h.pool.request_stop(a)
        assert a.stop_requested  # marked at once, before the worker has exited
        assert not h.pool.claim(a)


async def test_touch_stamps_the_pool_clock() -> None:
    async with harness(models_max=0) as h:
        a = await h.load("a")
        h.clock.now = 1234.5
        h.pool.touch(a)
        assert a.last_used == 1234.5


async def test_a_view_stays_valid_after_a_reload_replaced_its_model() -> None:
    async with harness(models_max=0) as h:
        old = await h.load("a")
        assert h.pool.claim(old)
        await h.pool.reload(Catalogue({"a": _entry("a", ttl=5.0)}))
        assert old.status is Status.UNLOADED  # new settings: the old worker was stopped
        h.pool.release(old)  # a request that held the old model still finishes cleanly
        assert old.in_flight == 0
        assert h.state("a") is not old
        assert h.state("a").entry.ttl == 5.0


def test_a_models_tags_reach_its_worker() -> None:
    # The worker lists them in its own /models, as llama-server's --tags.
    argv = worker_argv(_entry("a", tags=("chat", "small")))
    assert argv[argv.index("--tags") + 1] == "chat,small"
    assert "--tags" not in worker_argv(_entry("b"))


def test_an_embedding_model_answers_embeddings_without_a_flag(tmp_path: Path) -> None:
    # Its GGUF declares a pooling type; a chat model's does not; options may still say no.
    embedder = write_tiny_gguf(tmp_path / "embedder.gguf", pooling="mean")
    chat = write_tiny_gguf(tmp_path / "chat.gguf")
    assert "--embeddings" in worker_argv(_entry("e", path=embedder))
    assert "--embeddings" not in worker_argv(_entry("c", path=chat))
    refused = worker_argv(_entry("e", path=embedder, options=(("embeddings", "false"),)))
    assert "--embeddings" not in refused
    garbage = tmp_path / "broken.gguf"  # its worker's start says what is wrong with it
    garbage.write_bytes(b"GGUF but not really a model file")
    assert "--embeddings" not in worker_argv(_entry("b", path=garbage))


def test_workers_get_no_api_key_and_answer_no_web_page() -> None:
    argv = worker_argv(_entry("a"))
    assert argv[argv.index("--cors-origins") + 1] == "none"
    assert "--api-key" not in argv


async def test_each_worker_start_gets_a_key_of_its_own_in_its_environment() -> None:
    # docs/protocol.md §8: never on the command line (world-readable), new at each start.
    async with harness(models_max=2) as h:
        state = await h.load("a")
        first = h.launcher.environments["a"][WORKER_KEY_ENV]
        await h.load("b")
        assert h.launcher.environments["b"][WORKER_KEY_ENV] != first
        await h.pool.stop(state)
        await h.load("a")
        again = h.launcher.environments["a"][WORKER_KEY_ENV]
        assert len(first) >= 43
        assert again != first
        assert not any(first in arg or again in arg for arg in state.args)


def test_a_model_is_found_by_name_or_alias() -> None:
    entry = _entry("alpha", aliases=("a1",))
    catalogue = Catalogue({"alpha": entry})
    state = ModelState.unloaded(entry)
    models = {"alpha": state}
    assert find_model(catalogue, models, "alpha") is state
    assert find_model(catalogue, models, "a1") is state
    with pytest.raises(ModelNotFound) as caught:
        find_model(catalogue, models, "beta")
    assert caught.value.model == "beta"


def test_an_unknown_name_is_told_the_listed_models_only() -> None:
    """A hidden entry (a draft's, a deduplicated cache model) is not listed: a 404 does not
    offer it either."""
    shown, draft = _entry("alpha"), _entry("draft", hidden=True)
    catalogue = Catalogue({"alpha": shown, "draft": draft})
    models = {name: ModelState.unloaded(entry) for name, entry in catalogue.entries.items()}
    with pytest.raises(ModelNotFound) as caught:
        find_model(catalogue, models, "nothing-like-them")
    assert (caught.value.suggestions, caught.value.known) == ((), ("alpha",))


async def test_the_reload_diff_stops_running_models_whose_entry_changed_or_vanished() -> None:
    async with harness(models_max=0, names="abc") as h:
        a, b = await h.load("a"), await h.load("b")
        c = h.state("c")  # not running: never in the way
        catalogue = Catalogue({"a": a.entry, "b": replace(b.entry, ttl=1.0), "d": _entry("d")})
        assert stale_models(h.pool.models.values(), catalogue) == [b]
        assert carried_over(h.pool.models, catalogue) == {"a": a}
        assert c not in carried_over(h.pool.models, catalogue).values()


@pytest.mark.parametrize(
    ("error", "status", "message"),
    [
        (ModelNotFound("m"), 404, "model 'm' not found; no models are served; a hub model is "
         "fetched with `corral pull owner/repo[:quant]` (or POST /models)"),
        (AlreadyRunning("m"), 400, "model is already running"),
        (NoRoom("m"), 500, "model limit reached, try again later"),
        (LoadFailed("m", "exited with code 1: boom"), 500, "model 'm' failed to load: exited "
         "with code 1: boom"),
        (LoadInterrupted("m"), 503, "model 'm' was stopped before it finished loading"),
    ],
)  # fmt: skip
def test_scheduling_refusals_are_answered_as_before_the_split(
    error: SchedulingError, status: int, message: str
) -> None:
    answer = api_error(error)
    assert (answer.status, answer.message) == (status, message)
    with pytest.raises(ApiError) as caught, scheduling_answered():
        raise error
    assert (caught.value.status, caught.value.message) == (status, message)


async def test_a_stopped_model_can_be_waited_for() -> None:
    async with harness(models_max=0) as h:
        a = h.state("a")
        with anyio.fail_after(5):
            await a.wait_exited()  # never ran: nothing to wait for
        await h.load("a")
        h.pool.request_stop(a)
        with anyio.fail_after(5):
            await a.wait_exited()
        assert a.status is Status.UNLOADED
