"""Speculative decoding through a real worker: the tokens are plain decoding's, whatever guesses.

The draft models are tiny random models with the target's vocabulary: the target itself (a
self-draft, which guesses exactly what the target will sample) and another seed (which guesses
badly), so both the all-accepted and the rejected paths run. Outputs are compared between
workers of the same batching shape, and the tiny models' large logit gaps make greedy choices
immune to rounding.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from corral.children.protocol import EXIT_FAILED
from tests.support.files.tiny_gguf import WORDS, write_tiny_gguf
from tests.support.worker_process import worker

PROMPTS = ("once upon a time the little model", "hello world, this is a story", "the water")


def _complete(url: str, prompt: str, **extra: Any) -> dict[str, Any]:
    body = {"prompt": prompt, "n_predict": 48, "temperature": 0, "ignore_eos": True, **extra}
    response = httpx.post(f"{url}/completion", json=body, timeout=120)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _stream(url: str, prompt: str) -> tuple[str, dict[str, Any]]:
    body = {"prompt": prompt, "n_predict": 48, "temperature": 0, "ignore_eos": True}
    parts: list[str] = []
    with httpx.stream("POST", f"{url}/completion", json={**body, "stream": True}) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                parts.append(event["content"])
                if event["stop"]:
                    return "".join(parts), event["timings"]
    raise AssertionError("the stream ended without its last event")


@pytest.fixture(scope="module")
def plain(models_dir: Path) -> dict[str, str]:
    """What plain decoding says to each prompt."""
    with worker(models_dir / "alpha.gguf") as child:
        answers = {prompt: _complete(child.url, prompt) for prompt in PROMPTS}
    for answer in answers.values():
        assert "draft_n" not in answer["timings"]  # as llama-server: only when guessing
    return {prompt: answer["content"] for prompt, answer in answers.items()}


def _metric(url: str, name: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    return float(next(x for x in text.splitlines() if x.startswith(f"llamacpp:{name} ")).split()[1])


def test_a_self_draft_guesses_right_every_time(models_dir: Path, plain: dict[str, str]) -> None:
    draft = models_dir / "alpha.gguf"
    guessed = 0
    args = ("--model-draft", str(draft), "--spec-draft-n-max", "4", "-td", "1", "--metrics")
    with worker(draft, *args) as child:
        for prompt in PROMPTS:
            answer = _complete(child.url, prompt)
            assert answer["content"] == plain[prompt]
            timings = answer["timings"]
            assert timings["draft_n"] > 0
            assert timings["draft_n_accepted"] == timings["draft_n"]
            guessed += timings["draft_n"]
        # llama-server's counters, and its /slots flag.
        assert _metric(child.url, "spec_decode_num_draft_tokens_total") == guessed
        assert _metric(child.url, "spec_decode_num_accepted_tokens_total") == guessed
        assert _metric(child.url, "spec_decode_num_drafts_total") > 0
        assert httpx.get(f"{child.url}/slots").json()[0]["speculative"] is True


@pytest.mark.parametrize(("n_min", "n_max"), [(1, 2), (1, 4), (4, 8), (4, 12), (8, 16)])
def test_any_draft_length_gives_the_same_tokens(
    models_dir: Path, plain: dict[str, str], n_min: int, n_max: int
) -> None:
    # llama-server's test_different_draft_min_draft_max, with a draft that guesses badly.
    lengths = ("--spec-draft-n-min", str(n_min), "--spec-draft-n-max", str(n_max))
    with worker(models_dir / "alpha.gguf", "-md", str(models_dir / "beta.gguf"), *lengths) as child:
        assert _complete(child.url, PROMPTS[0])["content"] == plain[PROMPTS[0]]


def test_guesses_never_run_past_the_slots_context(models_dir: Path) -> None:
    # llama-server's test_slot_ctx_not_exceeded: a prompt that all but fills the context, and
    # no token budget, so generation runs to the context's end with guesses up to the last.
    target = models_dir / "alpha.gguf"
    with worker(target, "-md", str(target), "--spec-draft-n-max", "16") as child:
        body = {"prompt": "the " * 240, "temperature": 0, "ignore_eos": True}
        response = httpx.post(f"{child.url}/completion", json=body, timeout=120)
    assert response.status_code == 200
    answer = response.json()
    assert answer["content"]
    assert answer["stop_type"] == "limit"
    assert answer["tokens_evaluated"] + answer["tokens_predicted"] <= 256
    assert answer["timings"]["draft_n"] > 0


def test_a_poor_draft_is_corrected_without_changing_a_token(
    models_dir: Path, plain: dict[str, str]
) -> None:
    # Short prompts and long answers: the context is only 256 tokens.
    with worker(
        models_dir / "alpha.gguf", "-md", str(models_dir / "beta.gguf"), "--draft", "5"
    ) as child:
        for prompt in PROMPTS:
            answer = _complete(child.url, prompt)
            assert answer["content"] == plain[prompt]
            timings = answer["timings"]
            assert timings["draft_n"] > 0
            assert timings["draft_n_accepted"] < timings["draft_n"]
            text, streamed = _stream(child.url, prompt)
            assert text == plain[prompt]
            assert streamed["draft_n"] > 0


_THREE_SLOTS = ("--parallel", "3", "--ctx-size", "768")


@pytest.fixture(scope="module")
def plain_in_three_slots(models_dir: Path) -> list[str]:
    """What plain decoding says to the prompts sent together to three slots: the same for
    every draft, so asked once."""
    with worker(models_dir / "alpha.gguf", *_THREE_SLOTS) as child, ThreadPoolExecutor(3) as pool:
        return list(pool.map(lambda p: _complete(child.url, p)["content"], PROMPTS))


@pytest.mark.parametrize("draft", ["alpha.gguf", "beta.gguf"])
def test_concurrent_slots_verify_their_guesses_in_one_batch(
    models_dir: Path, plain_in_three_slots: list[str], draft: str
) -> None:
    expected = plain_in_three_slots
    drafting = worker(
        models_dir / "alpha.gguf", *_THREE_SLOTS, "--model-draft", str(models_dir / draft)
    )
    with drafting as child, ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda p: _complete(child.url, p), PROMPTS))
        streams = list(pool.map(lambda p: _stream(child.url, p), PROMPTS))
    assert [answer["content"] for answer in answers] == expected
    assert [text for text, _ in streams] == expected
    assert all(answer["timings"]["draft_n"] > 0 for answer in answers)


def test_sampling_with_a_seed_gives_the_same_tokens_with_a_draft(models_dir: Path) -> None:
    target = models_dir / "alpha.gguf"
    sampled = {"temperature": 1.0, "seed": 42, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
    with worker(target) as child:
        expected = _complete(child.url, PROMPTS[0], **sampled)["content"]
    with worker(target, "-md", str(models_dir / "beta.gguf")) as child:
        answer = _complete(child.url, PROMPTS[0], **sampled)
    assert answer["content"] == expected
    assert answer["timings"]["draft_n"] > 0


def test_a_grammar_constrains_the_guesses_as_it_does_plain_tokens(models_dir: Path) -> None:
    # A guess the grammar forbids is rejected by the sampler, which is the grammar's own.
    target = models_dir / "alpha.gguf"
    grammar = {"grammar": 'root ::= ("the" | " " | "water" | "story")+', "n_predict": 24}
    with worker(target) as child:
        expected = _complete(child.url, PROMPTS[0], **grammar)["content"]
    with worker(target, "-md", str(models_dir / "beta.gguf")) as child:
        answer = _complete(child.url, PROMPTS[0], **grammar)
    assert answer["content"] == expected
    assert re.fullmatch("(the|water|story| )*[a-z]{0,4}", expected)  # the budget may cut a word
    assert answer["timings"]["draft_n"] > answer["timings"]["draft_n_accepted"]


def test_prompt_lookup_guesses_from_the_history(models_dir: Path, plain: dict[str, str]) -> None:
    lookup = ("--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2")
    with worker(models_dir / "alpha.gguf", *lookup, "--spec-ngram-simple-size-m", "4") as child:
        answer = _complete(child.url, PROMPTS[0])
    assert answer["content"] == plain[PROMPTS[0]]
    # The random model soon repeats itself, which is what prompt lookup feeds on.
    assert answer["timings"]["draft_n_accepted"] > 0


@pytest.mark.parametrize("flags", [("--spec-type", "ngram-mod"), ("--spec-default",)])
def test_ngram_mod_guesses_from_its_hashed_table(
    models_dir: Path, plain: dict[str, str], flags: tuple[str, ...]
) -> None:
    # Short n-grams, so that the tiny model's repetitions are found within 48 tokens.
    mod = (*flags, "--spec-ngram-mod-n-match", "2")
    with worker(models_dir / "alpha.gguf", *mod, "--spec-ngram-mod-n-min", "1") as child:
        answer = _complete(child.url, PROMPTS[0])
        again = _complete(child.url, PROMPTS[0])
    assert answer["content"] == again["content"] == plain[PROMPTS[0]]
    assert answer["timings"]["draft_n_accepted"] > 0
    # The table outlives the request: the same answer again is guessed from the start.
    assert again["timings"]["draft_n_accepted"] > answer["timings"]["draft_n_accepted"]


@pytest.mark.parametrize("kind", ["k", "k4v"])
def test_ngram_maps_guess_from_the_slots_history(
    models_dir: Path, plain: dict[str, str], kind: str
) -> None:
    sizes = (f"--spec-ngram-map-{kind}-size-n", "2", f"--spec-ngram-map-{kind}-size-m", "4")
    with worker(models_dir / "alpha.gguf", "--spec-type", f"ngram-map-{kind}", *sizes) as child:
        answer = _complete(child.url, PROMPTS[0])
    assert answer["content"] == plain[PROMPTS[0]]
    assert answer["timings"]["draft_n_accepted"] > 0


def _write_lookup_cache(path: Path, tokens: list[int]) -> None:
    """A dynamic lookup cache of ``tokens``' 1- to 4-grams, each seen four times, in the
    format llama.cpp's llama-lookup-create writes."""
    counts: dict[tuple[int, ...], Counter[int]] = {}
    for size in range(1, 5):
        for i in range(size, len(tokens)):
            counts.setdefault(tuple(tokens[i - size : i]), Counter())[tokens[i]] += 4
    with path.open("wb") as file:
        for ngram, part in counts.items():
            file.write(struct.pack("<4ii", *ngram, *[-1] * (4 - len(ngram)), len(part)))
            for token, count in part.items():
                file.write(struct.pack("<ii", token, count))


def test_ngram_cache_guesses_from_the_prompt_and_a_lookup_cache(
    models_dir: Path, plain: dict[str, str], tmp_path: Path
) -> None:
    model = models_dir / "alpha.gguf"
    # As upstream's, the context cache counts the prompt's n-grams (a step adds one token, too
    # few for an n-gram of its own): a prompt holding what the model says feeds it.
    prompt = PROMPTS[0] + plain[PROMPTS[0]]
    with worker(model) as child:
        expected = _complete(child.url, prompt)["content"]
    with worker(model, "--spec-type", "ngram-cache") as child:
        answer = _complete(child.url, prompt)
        body = {"content": plain[PROMPTS[0]]}
        tokens = httpx.post(f"{child.url}/tokenize", json=body, timeout=60).json()["tokens"]
    assert answer["content"] == expected
    assert answer["timings"]["draft_n_accepted"] > 0
    # A dynamic cache that has seen an answer guesses it where the prompt alone guesses little.
    _write_lookup_cache(tmp_path / "dynamic.bin", tokens)
    lookup = ("--spec-type", "ngram-cache", "-lcd", str(tmp_path / "dynamic.bin"))
    with worker(model, *lookup) as child:
        cached = _complete(child.url, PROMPTS[0])
    with worker(model, "--spec-type", "ngram-cache") as child:  # a slot's cache outlives requests
        cold = _complete(child.url, PROMPTS[0])
    assert cold["content"] == cached["content"] == plain[PROMPTS[0]]
    assert cached["timings"]["draft_n_accepted"] > cold["timings"].get("draft_n_accepted", 0)


def _failed_load(model: Path, *args: str) -> str:
    """Start a worker that must fail to load; its log."""
    command = [sys.executable, "-m", "worker", "--model", str(model), "--ctx-size", "256", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == EXIT_FAILED, done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("words", "reason"),
    [
        ("alpha beta gamma", "vocabulary sizes differ by more than 128 (target 583, draft"),
        (
            " ".join(reversed(WORDS.split())),
            "token 352 differs (target '\u2581th', draft '\u2581te')",
        ),
    ],
)
def test_a_draft_with_another_vocabulary_fails_the_load(
    models_dir: Path, tmp_path: Path, words: str, reason: str
) -> None:
    other = write_tiny_gguf(tmp_path / "other.gguf", words=words)
    log = _failed_load(models_dir / "alpha.gguf", "--model-draft", str(other))
    assert f"draft model other.gguf cannot draft for this model: {reason}" in log
    assert "the target and draft vocabs are not compatible" in log


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--spec-type", "draft-mtp"), "--spec-type draft-mtp is not supported here"),
        (("--spec-type", "draft-simple"), "--spec-type draft-simple needs a draft model"),
        (
            ("--spec-type", "ngram-simple", "--draft-min", "5", "--draft-max", "4"),
            "--spec-draft-n-min (5) is above --spec-draft-n-max (4)",
        ),
        (("--spec-draft-p-min", "1.5", "-md", "x.gguf"), "--spec-draft-p-min must be at most 1"),
        (
            ("--spec-type", "ngram-mod", "--spec-ngram-mod-n-max", "1025"),
            "--spec-ngram-mod-n-max must be at most 1024",
        ),
        (
            ("--spec-type", "ngram-map-k4v", "--spec-ngram-map-k4v-size-m", "1025"),
            "--spec-ngram-map-k4v-size-m must be at most 1024",
        ),
        (
            ("--spec-type", "ngram-cache", "-lcs", "/nonexistent/static.bin"),
            "cannot read lookup cache /nonexistent/static.bin",
        ),
        (
            ("--spec-type", "ngram-simple", "--spec-synth-rates", "0.5"),
            "--spec-synth-rates must have 48 values, got 1",
        ),
        (
            ("--spec-type", "ngram-simple", "--spec-synth-rates", "half"),
            "--spec-synth-rates: expected numbers, got 'half'",
        ),
    ],
)
def test_settings_that_cannot_run_fail_the_load_saying_why(
    models_dir: Path, args: tuple[str, ...], reason: str
) -> None:
    assert reason in _failed_load(models_dir / "alpha.gguf", *args)


def test_malformed_values_are_refused_at_startup(models_dir: Path) -> None:
    command = [sys.executable, "-m", "worker", "--model", str(models_dir / "alpha.gguf")]
    for args, message in [
        (("--spec-type", "draft,ngram"), "key 'spec-type': expected some of none, draft-simple"),
        (("--spec-draft-n-max", "-1"), "key 'spec-draft-n-max': expected a number of at least 0"),
    ]:
        done = subprocess.run([*command, *args], capture_output=True, text=True, check=False)
        assert done.returncode == 2
        assert message in done.stderr


def test_a_sleeping_model_wakes_with_its_draft(models_dir: Path, plain: dict[str, str]) -> None:
    target = models_dir / "alpha.gguf"
    args = ("--model-draft", str(target), "--sleep-idle-seconds", "1")
    with worker(target, *args) as child:
        child.read_until("sleeping")
        answer = _complete(child.url, PROMPTS[0])
    assert answer["content"] == plain[PROMPTS[0]]
    assert answer["timings"]["draft_n_accepted"] == answer["timings"]["draft_n"] > 0


def test_a_context_shift_among_kept_guesses_writes_what_plain_decoding_writes(
    tmp_path: Path,
) -> None:
    # Guesses stop short of the context's end, so the shift comes between guessing steps; the
    # draft model then follows the shifted cache. The gain makes the answer depend on the
    # context, so a cache out of step would show.
    target = write_tiny_gguf(tmp_path / "seer.gguf", name="seer", attention_gain=10.0)
    shift = ("--context-shift", "--keep", "2")
    with worker(target, *shift) as child:
        expected = _complete(child.url, PROMPTS[0], n_predict=400)
    with worker(target, *shift, "-md", str(target)) as child:
        answer = _complete(child.url, PROMPTS[0], n_predict=400)
    assert expected["tokens_predicted"] == 400  # well past the 256-token context
    assert (answer["content"], answer["truncated"]) == (expected["content"], True)
    assert answer["timings"]["draft_n_accepted"] > 0
