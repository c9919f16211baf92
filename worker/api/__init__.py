"""The worker's HTTP routes: thin handlers over :class:`worker.model.LoadedModel`.

Every route answers 503 "Loading model" until the model is loaded, as llama-server does, so the
router can tell "starting" from "broken".
"""

from __future__ import annotations

from litestar import Litestar
from litestar.datastructures import State

from corral.errors import exception_handlers
from worker.api.anthropic import anthropic_routes
from worker.api.embeddings import embedding_routes
from worker.api.generation import ContextError, context_error_response, generation_routes
from worker.api.model_info import model_info_routes
from worker.api.rerank import rerank_routes
from worker.api.responses_api import responses_routes
from worker.api.state import WorkerState
from worker.api.streams import stream_routes

__all__ = ["WorkerState", "create_worker_app"]


def create_worker_app(state: WorkerState) -> Litestar:
    return Litestar(
        route_handlers=[
            *generation_routes,
            *anthropic_routes,
            *responses_routes,
            *embedding_routes,
            *rerank_routes,
            *stream_routes,
            *model_info_routes,
        ],
        exception_handlers={**exception_handlers, ContextError: context_error_response},
        state=State({"worker": state}),
        logging_config=None,
        debug=False,
    )
