"""A finished request's record made into spans, by the real SDK into its in-memory exporter:
where each phase goes, and which ids the root span gets (the ones the worker was told)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from msgspec.structs import replace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from corral.http.trace_context import parse_traceparent
from router.observe.requests import RequestRecord
from router.observe.tracing import traces_endpoint
from router.observe.tracing.context import HttpFacts, with_router_traceparent
from router.observe.tracing.spans import PresetIds, record_spans

HTTP = HttpFacts("POST", "http", "127.0.0.1", 8080, "1.1")
CLIENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
T0 = 1_700_000_000.0


@pytest.fixture
def exported() -> Iterator[tuple[InMemorySpanExporter, TracerProvider, PresetIds]]:
    memory = InMemorySpanExporter()
    ids = PresetIds()
    provider = TracerProvider(id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield memory, provider, ids
    provider.shutdown()


def _spans(
    exported: tuple[InMemorySpanExporter, TracerProvider, PresetIds], record: RequestRecord
) -> dict[str, ReadableSpan]:
    memory, provider, ids = exported
    record_spans(provider.get_tracer("test"), ids, record, HTTP)
    return {span.name: span for span in memory.get_finished_spans()}


def _whole_chat(**changes: object) -> RequestRecord:
    record = RequestRecord(id="r1", route="/v1/chat/completions", received=T0)
    record.model, record.dispatched, record.ended, record.status = "m", T0 + 0.1, T0 + 1.0, 200
    record.prompt_ms, record.predicted_ms = 200.0, 500.0
    record.prompt_tokens, record.completion_tokens = 12, 7
    return replace(record, **changes)


def _seconds(ns: int | None) -> float:
    assert ns is not None
    return round(ns / 1e9 - T0, 3)


def test_a_whole_answers_phases_are_placed_back_from_its_end_by_the_workers_timings(
    exported: tuple[InMemorySpanExporter, TracerProvider, PresetIds],
) -> None:
    spans = _spans(exported, _whole_chat())
    assert set(spans) == {"chat m", "queue wait", "prompt processing", "generation"}
    bounds = {n: (_seconds(s.start_time), _seconds(s.end_time)) for n, s in spans.items()}
    assert bounds == {
        "chat m": (0.0, 1.0),
        "queue wait": (0.0, 0.1),
        "prompt processing": (0.3, 0.5),
        "generation": (0.5, 1.0),
    }
    root = spans["chat m"]
    assert root.kind is SpanKind.SERVER
    assert root.parent is None
    assert root.attributes is not None
    assert root.attributes["gen_ai.usage.output_tokens"] == 7
    assert "error.type" not in root.attributes


def test_the_root_span_has_the_ids_the_worker_was_told_under_the_clients_span(
    exported: tuple[InMemorySpanExporter, TracerProvider, PresetIds],
) -> None:
    record = _whole_chat(trace_parent=CLIENT)
    sent = dict(with_router_traceparent(record, [(b"traceparent", b"x")]))
    told = parse_traceparent(sent[b"traceparent"])
    root = _spans(exported, record)["chat m"]
    assert told is not None
    assert root.parent is not None
    assert (root.context.trace_id, root.context.span_id) == (told.trace_id, told.span_id)
    assert root.parent.span_id == 0x00F067AA0BA902B7


def test_embeddings_are_prompt_processing_only_and_a_restore_comes_before_it(
    exported: tuple[InMemorySpanExporter, TracerProvider, PresetIds],
) -> None:
    record = _whole_chat(route="/v1/embeddings", predicted_ms=None, restored_tokens=64)
    spans = _spans(exported, record)
    assert set(spans) == {"embeddings m", "queue wait", "cache restore", "prompt processing"}
    assert _seconds(spans["cache restore"].start_time) == 0.1
    assert _seconds(spans["cache restore"].end_time) == 0.8  # prompt_ms before the end
    assert _seconds(spans["prompt processing"].end_time) == 1.0


def test_a_load_that_began_before_the_request_is_shown_from_its_arrival_and_a_5xx_is_an_error(
    exported: tuple[InMemorySpanExporter, TracerProvider, PresetIds],
) -> None:
    record = _whole_chat(load_started=T0 - 5, load_ended=T0 + 0.08, status=503)
    spans = _spans(exported, record)
    load = spans["model load"]
    assert (_seconds(load.start_time), _seconds(load.end_time)) == (0.0, 0.08)
    root = spans["chat m"]
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes is not None
    assert root.attributes["error.type"] == "503"


def test_tracing_is_on_for_an_endpoint_and_off_when_the_sdk_is_disabled() -> None:
    base = "http://c:4318/"
    assert traces_endpoint(None, {}) is None
    assert traces_endpoint(base, {}) == "http://c:4318/v1/traces"
    whole = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x"}
    assert traces_endpoint(None, whole) == traces_endpoint(base, whole) == "http://t/x"
    assert traces_endpoint(base, {"OTEL_SDK_DISABLED": "true"}) is None
    assert traces_endpoint(base, {"OTEL_TRACES_EXPORTER": "none"}) is None
