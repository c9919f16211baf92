"""The worker's Litestar app: every API folder's routes over one :class:`WorkerState`.

Every route answers 503 "Loading model" until the model is loaded, as llama-server does, so the
router can tell "starting" from "broken".
"""

from __future__ import annotations

import os

from litestar import Litestar
from litestar.datastructures import State

from corral.children.environment import max_body_from
from corral.http.errors import exception_handlers
from corral.http.origins import ManagementGate
from worker.answer.generation_request import ContextError, context_error_response
from worker.api.anthropic.routes import anthropic_routes
from worker.api.audio.routes import audio_routes
from worker.api.chat.routes import chat_routes
from worker.api.completions.routes import completion_routes
from worker.api.embeddings.rerank_routes import rerank_routes
from worker.api.embeddings.routes import embedding_routes
from worker.api.errors import engine_error_response
from worker.api.model_info.lora_routes import lora_routes
from worker.api.model_info.prometheus_metrics import ScrapeWindow
from worker.api.model_info.routes import model_info_routes
from worker.api.model_info.slot_routes import slot_routes
from worker.api.responses.routes import responses_routes
from worker.api.streams.routes import stream_routes
from worker.api.vertex.routes import predict_route
from worker.host.errors import EngineError
from worker.state import WorkerState

__all__ = ["bind_worker_state", "create_worker_app"]


def create_worker_app() -> Litestar:
    """The app, without its model: :func:`bind_worker_state` gives it one before it serves, so
    that a spare worker builds it before it has a model, and a worker that released its model
    serves the next one with it (docs/protocol.md §1, spare workers)."""
    return Litestar(
        route_handlers=[
            *chat_routes,
            *completion_routes,
            *anthropic_routes,
            *responses_routes,
            *embedding_routes,
            *rerank_routes,
            *stream_routes,
            *model_info_routes,
            *slot_routes,
            *lora_routes,
            *audio_routes,
            *predict_route(),
        ],
        # A worker run alone refuses its management routes to pages after routing (what
        # corral.http.origins.OriginCheck, around the app, left for it).
        middleware=[ManagementGate()],
        exception_handlers={
            **exception_handlers,
            ContextError: context_error_response,
            EngineError: engine_error_response,
        },
        state=State(),
        logging_config=None,
        # The router bounds what reaches a worker; it passes its own limit on (docs/protocol.md §8).
        request_max_body_size=max_body_from(os.environ),
        debug=False,
        openapi_config=None,  # no /schema: a worker serves the router, not a browser
    )


def bind_worker_state(app: Litestar, state: WorkerState) -> None:
    """The model ``app`` serves from now on, with a scrape window of its own."""
    app.state.worker = state
    app.state.scrape_window = ScrapeWindow()
