"""When a slot's state is read out of the context for the disk tier (worker/cache/slot_cache.py):
never at a request's end, since every other stream would wait; at an idle moment, before the
slot's cells are overwritten, or once it has waited ``SAVE_WITHIN`` seconds of busy engine.

Driven on the engine's own terms (submit, step, the idle call) in this process, with a clock
moved by hand, on the tiny model; the writer is the real one, writing real files.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.fakes.fake_clock import FakeClock
from worker.cache.slot_cache import SAVE_WITHIN, SlotCaches
from worker.cache.slot_files import erase_slot
from worker.engine.batching import BatchEngine
from worker.engine.generation import Finished, Generation, GenerationEvent
from worker.engine.model import LoadedModel
from worker.sampling.params import SamplingParams
from worker.settings.parse import parse_worker_args

FIRST, SECOND = [5 + i % 40 for i in range(40)], [60 + i % 40 for i in range(40)]


@contextmanager
def _loaded(models_dir: Path, folder: Path, slots: int, clock: FakeClock) -> Iterator[LoadedModel]:
    argv = ["--model", str(models_dir / "alpha.gguf"), "-c", "512", "--parallel", str(slots)]
    model = LoadedModel(parse_worker_args([*argv, "--kv-cache-dir", str(folder)]), lambda _: None)
    old = model.batcher
    model.batcher = BatchEngine(  # the same, but for the clock that SAVE_WITHIN is read on
        model.ctx,
        model.vocab,
        model.n_vocab,
        slots,
        model.settings.batch_size,
        caches=SlotCaches(
            model.ctx,
            prompt_cache=model.prompt_cache,
            writer=model.kv_writer,
            stats=model.kv_stats,
            clock=clock,
        ),
    )
    old.close()
    try:
        yield model
    finally:
        model.close()


def _submit(model: LoadedModel, prompt: list[int], max_tokens: int) -> list[GenerationEvent]:
    ends: list[GenerationEvent] = []
    params = SamplingParams(temperature=0)
    model.batcher.submit(Generation(prompt, params, max_tokens, ends.append, ignore_eos=True))
    return ends


def _finish(model: LoadedModel) -> None:
    while model.batcher.busy:
        model.batcher.step()


def _answer(model: LoadedModel, prompt: list[int]) -> list[int]:
    """Run ``prompt`` alone in slot 0 (one slot): what the slot holds once it is answered."""
    _submit(model, prompt, 4)
    _finish(model)
    return list(model.batcher.slots[0].tokens)


def _reads(model: LoadedModel) -> tuple[int, int]:
    return model.kv_stats.state_reads_idle, model.kv_stats.state_reads_busy


def _saved(model: LoadedModel) -> list[list[int]]:
    assert model.kv_writer is not None
    assert model.kv_store is not None
    assert model.kv_writer.flush(60)
    return sorted(saved.tokens for saved in model.kv_store.saved.values())


def test_a_state_left_unsaved_through_a_busy_while_is_read_between_steps(
    models_dir: Path, tmp_path: Path
) -> None:
    clock = FakeClock()
    with _loaded(models_dir, tmp_path, 2, clock) as model:
        long = _submit(model, FIRST, 200)
        short = _submit(model, SECOND, 2)
        while not any(isinstance(event, Finished) for event in short):
            model.batcher.step()
        model.batcher.step()
        assert _reads(model) == (0, 0)  # the long stream decodes on, unpaused
        clock.advance(SAVE_WITHIN)
        model.batcher.step()
        assert _reads(model) == (0, 1)
        assert _saved(model) == [model.batcher.slots[1].tokens]
        assert not any(isinstance(event, Finished) for event in long)
        _finish(model)
        assert model.batcher.save_idle()  # the engine's idle moment
        assert not model.batcher.save_idle()
        assert _reads(model) == (1, 1)


def test_a_next_turn_that_continues_the_slot_reads_only_at_its_own_end(
    models_dir: Path, tmp_path: Path
) -> None:
    with _loaded(models_dir, tmp_path, 1, FakeClock()) as model:
        turn = [*_answer(model, FIRST), *SECOND]  # the answer, then a new message
        both = _answer(model, turn)
        assert _reads(model) == (0, 0)
        assert model.batcher.save_idle()
        # One file holds both turns: the first one's state was never read on its own.
        assert _saved(model) == [both]
        assert both[: len(turn)] == turn


def test_a_slot_overwritten_by_another_prompt_is_read_once_for_its_copy_and_the_disk(
    models_dir: Path, tmp_path: Path
) -> None:
    with _loaded(models_dir, tmp_path, 1, FakeClock()) as model:
        first = _answer(model, FIRST)
        second = _answer(model, SECOND)
        # --cache-ram's copy of the first conversation was read once, and written from there.
        assert _reads(model) == (0, 0)
        assert _saved(model) == [first]
        erase_slot(model, 0)  # a slot action overwrites the second: it is written first
        assert _reads(model) == (0, 1)
        assert _saved(model) == sorted([first, second])
