"""The OpenTelemetry SDK set up for the router's traces: a tracer provider named ``corral``, the
OTLP/HTTP protobuf exporter, and a batch processor that exports from its own thread, off the
event loop. The SDK reads its standard ``OTEL_*`` variables itself (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``,
``OTEL_EXPORTER_OTLP_HEADERS``/``_TIMEOUT``/``_CERTIFICATE``/``_COMPRESSION``).

Imported only when tracing is on (:func:`router.observe.tracing.tracer_for`): a router without
it never loads the SDK.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from litestar.types import Scope
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from corral.llama_build import corral_version
from router.observe.requests import RequestRecord
from router.observe.tracing.context import HttpFacts
from router.observe.tracing.spans import PresetIds, record_spans

__all__ = ["tracer"]

_log = structlog.get_logger("corral.tracing")


def _resource() -> Resource:
    detected = Resource.create({SERVICE_VERSION: corral_version()})
    # The SDK names an unnamed service "unknown_service:python"; OTEL_SERVICE_NAME and
    # OTEL_RESOURCE_ATTRIBUTES' service.name still win over "corral".
    if str(detected.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        detected = detected.merge(Resource({SERVICE_NAME: "corral"}))
    return detected


def tracer(endpoint: str) -> Callable[[RequestRecord, Scope], None]:
    """What exports a finished request's record as a trace to ``endpoint`` (the OTLP/HTTP
    traces URL)."""
    ids = PresetIds()
    provider = TracerProvider(resource=_resource(), id_generator=ids)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracer = provider.get_tracer("corral.router", corral_version())
    _log.info("tracing requests", endpoint=endpoint)

    def finished(record: RequestRecord, scope: Scope) -> None:
        record_spans(tracer, ids, record, HttpFacts.of(scope))

    return finished
