"""llama-server's automatic slots: four sharing one KV cache, where idle slots' prompts give way,
to a copy in host memory (worker/cache/prompt_cache.py) or, when a batch finds no room, for good.

Driven on the engine's own terms (submit, step) in this process, so which slot takes which
request is decided, not raced.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

from worker.cache.prompt_cache import PromptCache
from worker.engine.generation import Delta, Failed, Finished, Generation, GenerationEvent
from worker.engine.model import LoadedModel
from worker.host.llama_bindings import llama_cpp
from worker.sampling.params import SamplingParams
from worker.settings.parse import parse_worker_args

FIRST, SECOND = [5 + i % 40 for i in range(100)], [60 + i % 40 for i in range(100)]
THIRD = [100 + i % 30 for i in range(60)]


@contextmanager
def _loaded(models_dir: Path, *flags: str) -> Iterator[LoadedModel]:
    argv = ["--model", str(models_dir / "alpha.gguf"), "-c", "256", "--no-kv-persist", *flags]
    loaded = LoadedModel(parse_worker_args(argv), lambda value: None)
    try:
        yield loaded
    finally:
        loaded.close()


@pytest.fixture
def model(models_dir: Path) -> Iterator[LoadedModel]:
    with _loaded(models_dir) as loaded:
        yield loaded


def _record(ends: list[GenerationEvent], tokens: list[int], event: GenerationEvent) -> None:
    if isinstance(event, Finished | Failed):
        ends.append(event)
    elif isinstance(event, Delta):
        tokens.append(event.token)


def _run_tokens(
    model: LoadedModel, *prompts: list[int], max_tokens: int = 2
) -> list[tuple[GenerationEvent, list[int]]]:
    """Submit the prompts together (one slot each) and step until every one has ended; each
    one's last event and the tokens it generated."""
    runs: list[tuple[list[GenerationEvent], list[int]]] = []
    for prompt in prompts:
        ends: list[GenerationEvent] = []
        tokens: list[int] = []
        emit = partial(_record, ends, tokens)
        params = SamplingParams(temperature=0)
        model.batcher.submit(Generation(prompt, params, max_tokens, emit, ignore_eos=True))
        runs.append((ends, tokens))
    while model.batcher.busy:
        model.batcher.step()
    return [(ends[0], tokens) for ends, tokens in runs]


def _run(model: LoadedModel, *prompts: list[int]) -> list[GenerationEvent]:
    return [end for end, _ in _run_tokens(model, *prompts)]


def _cached(model: LoadedModel) -> list[int]:
    return [len(slot.tokens) for slot in model.batcher.slots]


def _in_context(model: LoadedModel) -> list[int]:
    """How many cells each slot's sequence holds in llama.cpp's cache (not Corral's record)."""
    memory = llama_cpp.llama_get_memory(model.ctx)
    return [llama_cpp.llama_memory_seq_pos_max(memory, slot.id) + 1 for slot in model.batcher.slots]


def test_idle_slots_are_set_aside_as_a_generation_starts_and_come_back(
    model: LoadedModel, models_dir: Path
) -> None:
    assert all(isinstance(end, Finished) for end in _run(model, FIRST, SECOND))
    assert _cached(model) == [101, 101, 0, 0]
    # THIRD shares nothing with either: it takes slot 0 (its cache kept as a copy first), and
    # slot 1, idle, is copied and cleared in llama.cpp's cache too.
    _run(model, THIRD)
    assert _cached(model) == _in_context(model) == [61, 0, 0, 0]
    assert model.prompt_cache is not None
    assert sorted(len(copy.tokens) for copy in model.prompt_cache) == [101, 101]
    # The next turn of FIRST's conversation gets its copy back, and the same tokens as a run
    # that never lost it.
    [(end, tokens)] = _run_tokens(model, FIRST + [9] * 20, max_tokens=6)
    assert isinstance(end, Finished)
    assert end.cached_tokens == 100
    with _loaded(models_dir) as fresh:
        _run(fresh, FIRST)
        [(fresh_end, fresh_tokens)] = _run_tokens(fresh, FIRST + [9] * 20, max_tokens=6)
    assert isinstance(fresh_end, Finished)
    assert fresh_end.cached_tokens == 100
    assert tokens == fresh_tokens


def test_without_cache_ram_idle_slots_keep_their_caches(models_dir: Path) -> None:
    with _loaded(models_dir, "--cache-ram", "0") as model:
        assert model.prompt_cache is None
        _run(model, FIRST, SECOND)
        _run(model, THIRD)  # slot 0's cache is overwritten, slot 1 keeps its own
        assert _cached(model) == _in_context(model) == [61, 101, 0, 0]


def test_no_cache_idle_slots_copies_only_what_a_prompt_overwrites(models_dir: Path) -> None:
    with _loaded(models_dir, "--no-cache-idle-slots") as model:
        _run(model, FIRST, SECOND)
        _run(model, THIRD)
        assert _cached(model) == [61, 101, 0, 0]
        assert model.prompt_cache is not None
        assert [len(copy.tokens) for copy in model.prompt_cache] == [101]


def test_copies_past_the_cap_go_oldest_first(model: LoadedModel) -> None:
    _run(model, FIRST, SECOND)
    size = llama_cpp.llama_state_seq_get_size(model.ctx, 0)
    cache = PromptCache(model.ctx, max_bytes=size + size // 2)  # room for one copy
    cache.keep(0, model.batcher.slots[0].tokens)
    cache.keep(1, model.batcher.slots[1].tokens)
    assert [copy.tokens for copy in cache] == [model.batcher.slots[1].tokens]
    cache.keep(1, model.batcher.slots[1].tokens[:50])  # already held by the longer copy
    assert len(list(cache)) == 1
    too_small = PromptCache(model.ctx, max_bytes=size // 2)
    too_small.keep(0, model.batcher.slots[0].tokens)
    assert list(too_small) == []


def test_a_copy_that_would_mostly_be_lost_is_left_alone(model: LoadedModel) -> None:
    _run(model, FIRST)
    cache = PromptCache(model.ctx, max_bytes=None)
    cache.keep(0, model.batcher.slots[0].tokens)  # 101 tokens
    # 20 shared tokens keep less than a quarter of it: as llama-server, not taken.
    assert cache.restore(2, FIRST[:20] + [1] * 10, 0) is None
    assert cache.restore(2, FIRST[:30] + [1] * 10, 0) == FIRST + model.batcher.slots[0].tokens[100:]
    assert _in_context(model)[2] == 101
    assert list(cache) == []  # taken out: the slot holds it now


def test_idle_slots_give_their_cache_up_to_a_request_that_needs_the_room(
    models_dir: Path,
) -> None:
    # Without the copies (which clear idle slots as each generation starts), a batch that finds
    # no room makes them give way.
    with _loaded(models_dir, "--no-cache-idle-slots") as model:
        assert len(model.batcher.slots) == 4
        assert model.batcher.n_ctx_seq == 256  # one cache: each slot may use all of it
        assert all(isinstance(end, Finished) for end in _run(model, FIRST, SECOND))
        assert _cached(model) == [101, 101, 0, 0]  # kept for a next turn
        # SECOND, extended: its slot needs 181 cells, so the idle first one gives way.
        [end] = _run(model, SECOND + [7] * 80)
        assert isinstance(end, Finished), end
        assert end.cached_tokens == 100
        assert _cached(model) == _in_context(model) == [0, 181, 0, 0]


def test_sleep_frees_the_copies(model: LoadedModel) -> None:
    _run(model, FIRST, SECOND)
    _run(model, THIRD)
    assert model.prompt_cache is not None
    assert len(list(model.prompt_cache)) == 2
    model.sleep()
    assert list(model.prompt_cache) == []
    model.wake(lambda value: None)


def test_every_copy_and_every_answered_prompt_is_written_to_disk(
    models_dir: Path, tmp_path: Path
) -> None:
    prompts = [[200 + 10 * n + i % 7 for i in range(30)] for n in range(6)]
    with _loaded(models_dir, "--kv-persist", "--kv-cache-dir", str(tmp_path)) as model:
        for prompt in prompts:  # each one takes slot 0, and the one before becomes a copy
            _run(model, prompt)
        assert model.prompt_cache is not None
        assert [copy.tokens[:30] for copy in model.prompt_cache] == prompts[:5]
        assert model.kv_store is not None
        store = model.kv_store
    # The disk tier holds them all, the oldest copy too: the stop only waits for the writer.
    saved = sorted(saved.tokens[:30] for saved in store.saved.values())
    assert saved == sorted(prompts)
