"""``/health`` in single-model mode waits for the model, as llama-server's (router/api/models.py).

The handler runs over a real worker pool driven by the fake launcher, so the load is held
exactly as long as the test wants.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from corral.http.errors import ApiError
from router.api.models import health
from router.settings import ServeSettings
from router.workers.model_state import Status
from tests.support.scheduling_harness import Harness, harness

pytestmark = pytest.mark.anyio


async def _health(h: Harness, *, single_model: bool) -> Any:
    runtime = SimpleNamespace(settings=ServeSettings(single_model=single_model), pool=h.pool)
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(runtime=runtime)))
    return await health.fn(request)


async def test_health_is_503_while_the_one_model_loads() -> None:
    async with harness(models_max=0, names="a") as h:
        h.pool.start(h.state("a"))
        with pytest.raises(ApiError) as loading:
            await _health(h, single_model=True)
        error = loading.value.envelope().error
        assert (error.code, error.message, error.type) == (
            503,
            "Loading model",
            "unavailable_error",
        )
        # A router with a models dir is healthy while its models load.
        assert await _health(h, single_model=False) == {"status": "ok"}
        await h.launched("a")
        h.launcher.children["a"].ready()
        await h.until(lambda: h.state("a").status is Status.LOADED)
        assert await _health(h, single_model=True) == {"status": "ok"}
