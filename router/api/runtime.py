"""What every router handler needs, stored once on the app (``app.state.runtime``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Request

from router.metrics import RequestCounter
from router.registry import ModelRegistry
from router.scheduler import Scheduler
from router.settings import ServeSettings

__all__ = ["RouterRuntime", "runtime"]


@dataclass(frozen=True, slots=True)
class RouterRuntime:
    settings: ServeSettings
    registry: ModelRegistry
    scheduler: Scheduler
    requests: RequestCounter


def runtime(request: Request[Any, Any, Any]) -> RouterRuntime:
    value: RouterRuntime = request.app.state.runtime
    return value
