"""What every worker handler needs: the settings, the engine and, once loaded, the model."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from litestar import Request

from corral.http.errors import ApiError
from worker.answer.stream_sessions import StreamSessions, StreamSettings
from worker.engine.engine import Engine
from worker.engine.model import LoadedModel
from worker.settings.worker_settings import WorkerSettings

__all__ = ["AnyRequest", "WorkerState", "loaded"]

AnyRequest = Request[Any, Any, Any]


@dataclass
class WorkerState:
    settings: WorkerSettings
    engine: Engine
    model: LoadedModel | None = None
    started: float = field(default_factory=time.time)
    sessions: StreamSessions = field(
        default_factory=lambda: StreamSessions(StreamSettings.from_environment())
    )


def loaded(request: AnyRequest) -> tuple[Engine, LoadedModel]:
    """The engine and the model; 503 "Loading model" until the model is there, as upstream."""
    state: WorkerState = request.app.state.worker
    if state.model is None:
        raise ApiError(503, "Loading model")
    return state.engine, state.model
