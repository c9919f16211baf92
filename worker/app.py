"""The worker's Litestar app: every API folder's routes over one :class:`WorkerState`.

Every route answers 503 "Loading model" until the model is loaded, as llama-server does, so the
router can tell "starting" from "broken".
"""

from __future__ import annotations

import os

from litestar import Litestar
from litestar.datastructures import State

from corral.children.environment import max_body_from
from corral.errors import exception_handlers
from worker.anthropic.routes import anthropic_routes
from worker.chat.routes import chat_routes
from worker.completions.routes import completion_routes
from worker.embeddings.rerank_routes import rerank_routes
from worker.embeddings.routes import embedding_routes
from worker.generation_pipeline import ContextError, context_error_response
from worker.model_info.lora_routes import lora_routes
from worker.model_info.prometheus_metrics import ScrapeWindow
from worker.model_info.routes import model_info_routes
from worker.model_info.slot_routes import slot_routes
from worker.responses_api.routes import responses_routes
from worker.streams.routes import stream_routes
from worker.vertex.routes import predict_route

__all__ = ["create_worker_app"]


def create_worker_app() -> Litestar:
    """The app, without its :class:`~worker.state.WorkerState`: the caller sets
    ``app.state.worker`` before serving, so that a spare worker can build it before it has a
    model (docs/protocol.md §1, spare workers)."""
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
            *predict_route(),
        ],
        exception_handlers={**exception_handlers, ContextError: context_error_response},
        state=State({"scrape_window": ScrapeWindow()}),
        logging_config=None,
        # The router bounds what reaches a worker; it passes its own limit on (docs/protocol.md §8).
        request_max_body_size=max_body_from(os.environ),
        debug=False,
        openapi_config=None,  # no /schema: a worker serves the router, not a browser
    )
