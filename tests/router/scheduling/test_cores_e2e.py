"""The CPU cores shared among busy workers (docs/serving.md, "CPU threads"), through a real
router and real workers of the bundled model: two models generating at once split the cores,
one generating alone has them all, and a model whose threads are set is never told.

Each model's stream is held open after its first token (the model keeps generating: even a fast
box takes seconds for the 1000 tokens asked), read while the others' are, then dropped, which
ends its generation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from corral.cpu_threads import default_threads
from tests.support.chat_streams import generating
from tests.support.files.bundled_model import bundled_model
from tests.support.router_process import RouterProcess, running_router
from tests.support.thread_counts import threads_in, threads_once

CORES = default_threads()  # the router counts the cores as the workers do
EXPLICIT = 3  # model c's own --threads: no share on any box gives it


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    if CORES < 2:
        pytest.skip("one core: there is nothing to share")
    model = bundled_model()
    preset = tmp_path_factory.mktemp("cores") / "models.ini"
    preset.write_text(
        f"[a]\nmodel = {model}\n[b]\nmodel = {model}\n[c]\nmodel = {model}\nthreads = {EXPLICIT}\n"
    )
    args = ["--models-preset", str(preset), "-c", "1024", "-np", "1", "--metrics"]
    with running_router(args) as process:
        for name in "abc":  # loaded before the streams, so none ends while another loads
            body = {"model": name, "prompt": "Hi", "max_tokens": 1}
            assert process.client.post("/v1/completions", json=body).status_code == 200
        yield process


def _generating(router: RouterProcess, stack: ExitStack, model: str) -> None:
    """Start a long stream on ``model`` and return once its first token came; it is dropped
    when ``stack`` closes."""
    body = {"model": model, "prompt": "Once upon a time", "max_tokens": 1000, "ignore_eos": True}
    generating(router, stack, body)


def _threads(router: RouterProcess, model: str, wanted: tuple[int, int]) -> tuple[int, int]:
    return threads_once(lambda: router.client.get(f"/metrics?model={model}").text, wanted)


def _given(router: RouterProcess) -> dict[str, int]:
    """The router's ``corral_model_threads``, per model."""
    text = router.client.get("/metrics").text
    return {
        m[1]: int(float(m[2]))
        for m in re.finditer(r'^corral_model_threads\{model="(\w+)"\} (\S+)$', text, re.M)
    }


def test_busy_models_share_the_cores_and_one_alone_has_them_all(router: RouterProcess) -> None:
    first, second = CORES - CORES // 2, CORES // 2  # the one busy longest has the odd core
    with ExitStack() as streams:
        for model in "abc":
            _generating(router, streams, model)
        assert _threads(router, "a", (first, first)) == (first, first)
        assert _threads(router, "b", (second, second)) == (second, second)
        assert threads_in(router.client.get("/metrics?model=c").text) == (EXPLICIT, EXPLICIT)
        assert _given(router) == {"a": first, "b": second}  # c is its own
    with ExitStack() as streams:
        _generating(router, streams, "a")  # alone now: it has them all
        assert _threads(router, "a", (CORES, CORES)) == (CORES, CORES)
        # Not b's: it kept what it had when it went idle, which depends on whether the router
        # saw a's or b's client leave first.
        assert _given(router)["a"] == CORES
    assert threads_in(router.client.get("/metrics?model=c").text) == (EXPLICIT, EXPLICIT)
