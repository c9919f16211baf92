"""llama-server's automatic slots: four sharing one KV cache, where idle slots' prompts give way.

Driven on the engine's own terms (submit, step) in this process, so which slot takes which
request is decided, not raced.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.generation import Failed, Finished, Generation, GenerationEvent
from worker.model import LoadedModel
from worker.sampling import SamplingParams
from worker.settings import parse_worker_args


@pytest.fixture
def model(models_dir: Path) -> Iterator[LoadedModel]:
    settings = parse_worker_args(["--model", str(models_dir / "alpha.gguf"), "-c", "256"])
    loaded = LoadedModel(settings, lambda value: None)
    try:
        yield loaded
    finally:
        loaded.close()


def _run(model: LoadedModel, *prompts: list[int]) -> list[GenerationEvent]:
    """Submit the prompts together (one slot each) and step until every one has ended."""
    ends: list[GenerationEvent] = []

    def emit(event: GenerationEvent) -> None:
        if isinstance(event, Finished | Failed):
            ends.append(event)

    for prompt in prompts:
        params = SamplingParams(temperature=0)
        model.batcher.submit(Generation(prompt, params, 2, emit, ignore_eos=True))
    while model.batcher.busy:
        model.batcher.step()
    return ends


def _cached(model: LoadedModel) -> list[int]:
    return [len(slot.tokens) for slot in model.batcher.slots]


def test_idle_slots_give_their_cache_up_to_a_request_that_needs_the_room(
    model: LoadedModel,
) -> None:
    assert len(model.batcher.slots) == 4
    assert model.batcher.n_ctx_seq == 256  # one cache: each slot may use all of it
    first, second = [5 + i % 40 for i in range(100)], [60 + i % 40 for i in range(100)]
    assert all(isinstance(end, Finished) for end in _run(model, first, second))
    assert _cached(model) == [101, 101, 0, 0]  # kept for a next turn
    # The second prompt, extended: its slot needs 181 cells, so the idle first one gives way.
    [end] = _run(model, second + [7] * 80)
    assert isinstance(end, Finished), end
    assert end.cached_tokens == 100
    assert _cached(model) == [0, 181, 0, 0]
