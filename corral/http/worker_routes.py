"""The one list of a worker's routes: the worker registers them, the router relays them.

A worker serves llama-server's API for its one model; the router answers the same paths for
every model and relays each request to the worker of the model it names (docs/protocol.md §3).
Both read their paths from here, so a route the worker gains is one the router must account
for: ``tests/corral/http/test_worker_routes.py`` fails on a worker route that is neither
relayed nor kept to the worker with a reason, and on a relayed one the router does not serve.

How the router relays each (:class:`Relay`):

- ``BODY``: the model is the JSON body's ``model``; the bytes go on untouched
  (``router/api/inference.py``, one handler for all of them).
- ``QUERY``: a ``GET`` whose model is ``?model=`` (same module).
- ``OWN``: the router has a handler of its own for the path, which relays when it must (``how``
  says where and when): a model from ``?model=`` or single-model mode, a conversation's owner,
  or what an inference key may not read taken out.
- ``WORKER_ONLY``: never relayed; ``how`` says why.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from corral.http.origins import management_opt

__all__ = [
    "APPLY_TEMPLATE",
    "CHAT",
    "CHAT_INPUT_TOKENS",
    "COMPLETION",
    "COMPLETIONS",
    "COUNT_TOKENS",
    "DETOKENIZE",
    "EMBEDDING",
    "EMBEDDINGS",
    "HEALTH",
    "INFILL",
    "LORA_ADAPTERS",
    "MAX_AUDIO_UPLOAD",
    "MESSAGES",
    "METRICS",
    "MODEL",
    "MODELS",
    "PREDICT",
    "PROPS",
    "RERANK",
    "RESPONSES",
    "RESPONSES_INPUT_TOKENS",
    "SET_LORA_ADAPTERS",
    "SLOTS",
    "SLOT_ACTION",
    "SPEECH",
    "SPEECH_REFUSAL",
    "STREAM_LOOKUP",
    "STREAM_REPLAY",
    "STREAM_STOP",
    "TOKENIZE",
    "TRANSCRIPTIONS",
    "WORKER_ROUTES",
    "Relay",
    "WorkerRoute",
    "audio_upload_refusal",
    "public_paths",
    "relayed_paths",
    "worker_opt",
]


class Relay(enum.Enum):
    BODY = "the model named in the JSON body"
    QUERY = "the model named by ?model="
    OWN = "a handler of the router's own"
    WORKER_ONLY = "not relayed"


@dataclass(frozen=True, slots=True)
class WorkerRoute:
    method: str
    paths: list[str]  # a list, as Litestar's decorators take several paths
    relay: Relay
    how: str = ""  # for OWN: where the router relays it; for WORKER_ONLY: why it does not
    admin: bool = False  # management: writes files, or changes every caller's answers
    counted: bool = True  # takes a key's concurrency slot (starts or runs a generation)
    public: bool = False  # answered without a key


def _body(*paths: str) -> WorkerRoute:
    return WorkerRoute("POST", list(paths), Relay.BODY)


CHAT = _body("/v1/chat/completions", "/chat/completions")
CHAT_INPUT_TOKENS = _body("/v1/chat/completions/input_tokens", "/chat/completions/input_tokens")
COMPLETIONS = _body("/v1/completions")  # OpenAI's shape
COMPLETION = _body("/completion", "/completions")  # llama-server's own shape
INFILL = _body("/infill")
MESSAGES = _body("/v1/messages")
COUNT_TOKENS = _body("/v1/messages/count_tokens")
RESPONSES = _body("/v1/responses", "/responses")
RESPONSES_INPUT_TOKENS = _body("/v1/responses/input_tokens", "/responses/input_tokens")
EMBEDDINGS = _body("/v1/embeddings")  # OpenAI's shape
EMBEDDING = _body("/embedding", "/embeddings")  # llama-server's own shape
RERANK = _body("/rerank", "/v1/rerank", "/reranking", "/v1/reranking")
TOKENIZE = _body("/tokenize")
DETOKENIZE = _body("/detokenize")
APPLY_TEMPLATE = _body("/apply-template")
# Served by a worker only under Vertex AI (AIP_MODE=PREDICTION), which may move it
# (AIP_PREDICT_ROUTE); the router relays it here whatever its worker's path.
PREDICT = _body("/predict")
SLOTS = WorkerRoute("GET", ["/slots"], Relay.QUERY)
SLOT_ACTION = WorkerRoute(
    "POST",
    ["/slots/{id_slot:str}"],
    Relay.OWN,
    "router/api/inference.py: the model from the body or ?model= (an erase has no body)",
    admin=True,
)
LORA_ADAPTERS = WorkerRoute(
    "GET",
    ["/lora-adapters"],
    Relay.OWN,
    "router/api/lora.py: ?model=, adapters' paths hidden from inference keys",
)
SET_LORA_ADAPTERS = WorkerRoute(
    "POST",
    ["/lora-adapters"],
    Relay.OWN,
    "router/api/lora.py: the body is an array, so ?model= names the model",
    admin=True,
)
PROPS = WorkerRoute(
    "GET",
    ["/props"],
    Relay.OWN,
    "router/api/models.py: with ?model= or one model; else the router's own props",
)
METRICS = WorkerRoute(
    "GET",
    ["/metrics"],
    Relay.OWN,
    "router/api/inference.py: with ?model= or one model; else the router's own metrics",
)
STREAM_REPLAY = WorkerRoute(
    "GET",
    ["/v1/stream"],
    Relay.OWN,
    "router/api/streams.py: to the worker that owns the conversation",
    counted=False,
)
STREAM_STOP = WorkerRoute(
    "DELETE",
    ["/v1/stream"],
    Relay.OWN,
    "router/api/streams.py: to the worker that owns the conversation",
    counted=False,
)
STREAM_LOOKUP = WorkerRoute(
    "POST",
    ["/v1/streams/lookup"],
    Relay.OWN,
    "router/api/streams.py: each conversation asked of the worker that owns it",
    counted=False,
)
# Speech to text, as llama-server's: the upload is multipart, so the model is its ``model``
# field. An upload is at most OpenAI's 25 MB, and never more than --max-body (docs/api.md).
TRANSCRIPTIONS = WorkerRoute(
    "POST",
    ["/v1/audio/transcriptions", "/audio/transcriptions"],
    Relay.OWN,
    "router/api/inference.py: the model from the multipart form's model field",
)
MAX_AUDIO_UPLOAD = 25 << 20


def audio_upload_refusal(size: int) -> str:
    """The 413's words for an upload of ``size`` bytes, the router's and the worker's."""
    return (
        f"the upload is {size} bytes; an audio upload may be at most {MAX_AUDIO_UPLOAD} bytes "
        "(25 MiB, OpenAI's limit)"
    )


# Text to speech: refused by the router and the worker alike, in the same words (docs/api.md).
SPEECH = WorkerRoute(
    "POST",
    ["/v1/audio/speech", "/audio/speech"],
    Relay.OWN,
    "router/api/inference.py: refused there too (501), so no model loads for it",
    counted=False,
)
SPEECH_REFUSAL = (
    "Text to speech is not supported: the llama-server of the llama.cpp this server runs "
    "(llama-cpp-python 0.3.36) has no /v1/audio/speech, and Corral does not run llama.cpp's "
    "audio generation (libmtmd's Qwen3-TTS and Pocket TTS pipelines) behind it"
)
HEALTH = WorkerRoute(
    "GET",
    ["/health", "/v1/health"],
    Relay.WORKER_ONLY,
    "the router answers its own; it asks a worker's itself (router/workers/stall_watchdog.py)",
    public=True,
)
MODELS = WorkerRoute(
    "GET",
    ["/v1/models", "/models"],
    Relay.WORKER_ONLY,
    "the router lists every model of its catalogue itself (router/api/models.py)",
)
MODEL = WorkerRoute(
    "GET",
    ["/v1/models/{model_id:path}"],
    Relay.WORKER_ONLY,
    "the router answers each model's entry from its own list (router/api/models.py)",
)

WORKER_ROUTES: tuple[WorkerRoute, ...] = (
    CHAT,
    CHAT_INPUT_TOKENS,
    COMPLETIONS,
    COMPLETION,
    INFILL,
    MESSAGES,
    COUNT_TOKENS,
    RESPONSES,
    RESPONSES_INPUT_TOKENS,
    EMBEDDINGS,
    EMBEDDING,
    RERANK,
    TOKENIZE,
    DETOKENIZE,
    APPLY_TEMPLATE,
    PREDICT,
    SLOTS,
    SLOT_ACTION,
    LORA_ADAPTERS,
    SET_LORA_ADAPTERS,
    PROPS,
    METRICS,
    STREAM_REPLAY,
    STREAM_STOP,
    STREAM_LOOKUP,
    TRANSCRIPTIONS,
    SPEECH,
    HEALTH,
    MODELS,
    MODEL,
)


def relayed_paths(relay: Relay, method: str) -> list[str]:
    """Every path relayed as ``relay`` for ``method``, in the table's order."""
    return [
        path
        for route in WORKER_ROUTES
        if route.relay is relay and route.method == method
        for path in route.paths
    ]


def public_paths() -> frozenset[str]:
    """The paths answered without a key."""
    return frozenset(path for route in WORKER_ROUTES if route.public for path in route.paths)


def worker_opt(route: WorkerRoute) -> dict[str, Any]:
    """The ``opt`` of the worker's handler for ``route``: its management marked, which a worker
    run alone refuses to pages only ``*`` covers (corral/http/origins.py)."""
    return management_opt() if route.admin else {}
