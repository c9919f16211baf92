"""A finished request's record made into one trace (docs/operations.md, Traces): a SERVER root
span and a child span for each phase the request went through, with the GenAI and HTTP
semantic conventions' attributes.

Built after the request ended, from its timestamps (``start_time``/``end_time``), so nothing is
held while it runs. The root span's ids are the ones the worker was told at dispatch
(:func:`router.observe.tracing.context.trace_ids`): :class:`PresetIds` hands them to the SDK.
Only :mod:`router.observe.tracing.export` imports this module, and only with tracing on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from opentelemetry import trace
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from router.observe.tracing.context import HttpFacts, trace_ids

__all__ = ["PROVIDER", "PresetIds", "Record", "operation_of", "record_spans"]

# gen_ai.provider.name: no registered value names a local llama.cpp server, so its own name.
PROVIDER = "corral"
# The API paths that are GenAI operations, by the name the conventions give the operation.
_OPERATIONS = {
    "chat": (
        "/v1/chat/completions", "/chat/completions", "/v1/messages", "/v1/responses",
        "/responses", "/api/chat",
    ),
    "text_completion": (
        "/v1/completions", "/completion", "/completions", "/infill", "/api/generate",
    ),
    "embeddings": (
        "/v1/embeddings", "/embedding", "/embeddings", "/api/embed", "/api/embeddings",
    ),
}  # fmt: skip
_OPERATION_OF = {path: operation for operation, paths in _OPERATIONS.items() for path in paths}


class Record(Protocol):
    """What spans are built from: the per-request record's fields (router/observe/requests.py)."""

    id: str
    model: str
    route: str
    stream: bool
    received: float
    load_started: float | None
    load_ended: float | None
    dispatched: float | None
    first_token: float | None
    ended: float | None
    prompt_tokens: int | None
    cached_tokens: int | None
    completion_tokens: int | None
    prompt_ms: float | None
    predicted_ms: float | None
    restored_tokens: int | None
    status: int | None
    trace_parent: str | None


def operation_of(route: str) -> str | None:
    """``gen_ai.operation.name`` of an API path; ``None`` for one that is no GenAI operation."""
    return _OPERATION_OF.get(route)


class PresetIds(IdGenerator):
    """Random ids, except the next span's (and, for a new trace, its trace id): the root span
    gets the ids the worker was already told. One thread builds spans, so nothing races."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()
        self._next: tuple[int, int] | None = None

    def preset(self, trace_id: int, span_id: int) -> None:
        self._next = (trace_id, span_id)

    def generate_trace_id(self) -> int:
        return self._next[0] if self._next is not None else self._random.generate_trace_id()

    def generate_span_id(self) -> int:
        if self._next is None:
            return self._random.generate_span_id()
        span_id, self._next = self._next[1], None
        return span_id


@dataclass(frozen=True, slots=True)
class _Phase:
    name: str
    start: float
    end: float
    attributes: Mapping[str, AttributeValue]


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _worker_phases(record: Record, operation: str | None, end: float) -> list[_Phase]:
    """Prompt processing, generation and a cache restore, placed by the worker's timings
    counted back from the answer's end (the generation ends with it). Without timings, a
    stream's first event ends the prompt, though some APIs' first event (Anthropic's
    ``message_start``) comes before the prompt is read."""
    start = record.dispatched
    if start is None:
        return []
    prompt_s = (record.prompt_ms or 0.0) / 1000
    if operation == "embeddings":
        prompt_end = end
    elif record.predicted_ms is not None:
        prompt_end = max(start, end - record.predicted_ms / 1000)
    elif record.first_token is not None:
        prompt_end = record.first_token
    else:
        return []  # no timings: nothing says where one phase ends
    prompt_start = max(start, prompt_end - prompt_s) if record.prompt_ms is not None else start
    phases = []
    if record.restored_tokens:
        restored = {"corral.cache.restored_tokens": record.restored_tokens}
        phases.append(_Phase("cache restore", start, prompt_start, restored))
    prompt: dict[str, AttributeValue] = {}
    if record.prompt_tokens is not None:
        prompt["gen_ai.usage.input_tokens"] = record.prompt_tokens
    if record.cached_tokens is not None:
        prompt["gen_ai.usage.cache_read.input_tokens"] = record.cached_tokens
    phases.append(_Phase("prompt processing", prompt_start, prompt_end, prompt))
    if operation != "embeddings":
        generated: dict[str, AttributeValue] = {}
        if record.completion_tokens is not None:
            generated["gen_ai.usage.output_tokens"] = record.completion_tokens
        phases.append(_Phase("generation", prompt_end, end, generated))
    return phases


def _phases(record: Record, operation: str | None, end: float) -> list[_Phase]:
    phases = []
    if record.dispatched is not None:
        phases.append(_Phase("queue wait", record.received, record.dispatched, {}))
    if record.load_started is not None and record.load_ended is not None:
        # A load that began before the request came is shown from when the request waited.
        loading = {"gen_ai.request.model": record.model}
        start = max(record.received, record.load_started)
        phases.append(_Phase("model load", start, max(start, record.load_ended), loading))
    return phases + _worker_phases(record, operation, end)


def _root_attributes(
    record: Record, http: HttpFacts, operation: str | None
) -> dict[str, AttributeValue]:
    found: dict[str, AttributeValue] = {
        "http.request.method": http.method,
        "url.path": record.route,
        "url.scheme": http.scheme,
        "network.protocol.version": http.protocol_version,
        "corral.request.id": record.id,
        "corral.stream": record.stream,
    }
    if http.server_address:
        found["server.address"] = http.server_address
    if http.server_port is not None:
        found["server.port"] = http.server_port
    if record.status is not None:
        found["http.response.status_code"] = record.status
    if record.status is not None and record.status >= 500:
        found["error.type"] = str(record.status)
    if record.model:
        found["gen_ai.request.model"] = found["gen_ai.response.model"] = record.model
    if operation is not None:
        found["gen_ai.operation.name"] = operation
        # The registered attribute, and its older name for backends that read only that.
        found["gen_ai.provider.name"] = found["gen_ai.system"] = PROVIDER
    for name, value in (
        ("gen_ai.usage.input_tokens", record.prompt_tokens),
        ("gen_ai.usage.output_tokens", record.completion_tokens),
        ("gen_ai.usage.cache_read.input_tokens", record.cached_tokens),
    ):
        if value is not None:
            found[name] = value
    return found


def record_spans(tracer: trace.Tracer, ids: PresetIds, record: Record, http: HttpFacts) -> None:
    """Start and end the request's spans; the tracer's processor exports them."""
    operation = operation_of(record.route)
    end = record.ended if record.ended is not None else record.received
    known = trace_ids(record.id, record.trace_parent)
    parent = None
    if known.parent_span_id is not None:
        client = SpanContext(
            known.trace_id, known.parent_span_id, is_remote=True,
            trace_flags=trace.TraceFlags(known.flags),
        )  # fmt: skip
        parent = trace.set_span_in_context(NonRecordingSpan(client))
    ids.preset(known.trace_id, known.span_id)
    name = f"{operation} {record.model}" if operation else f"{http.method} {record.route}"
    root = tracer.start_span(
        name,
        context=parent,
        kind=SpanKind.SERVER,
        attributes=_root_attributes(record, http, operation),
        start_time=_ns(record.received),
    )
    inside = trace.set_span_in_context(root)
    for phase in _phases(record, operation, end):
        child = tracer.start_span(
            phase.name, context=inside, attributes=phase.attributes, start_time=_ns(phase.start)
        )
        child.end(end_time=_ns(max(phase.start, phase.end)))
    if record.status is not None and record.status >= 500:
        root.set_status(Status(StatusCode.ERROR))
    root.end(end_time=_ns(end))
