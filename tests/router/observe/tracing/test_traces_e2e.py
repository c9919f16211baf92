"""A real router exporting traces to a real OTLP/HTTP receiver (docs/operations.md, Traces).

The receiver is a standard-library HTTP server on loopback that takes ``POST /v1/traces`` and
decodes each ``ExportTraceServiceRequest`` with the OpenTelemetry proto package. The router
serves a tiny model it has not loaded, so the first (streamed) chat waits for its load.
"""

from __future__ import annotations

import gzip
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import ollama
import openai
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.keyed_router import bearer
from tests.support.local_server import serving
from tests.support.router_process import RouterProcess, running_router

KEY = "trace-test-key-5be1c0"
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
PROMPT: Any = [{"role": "user", "content": "hi"}]  # Any: each client types it its own way
# A schema the worker cannot fully turn into a grammar: it logs a warning while it answers.
_LOOKAHEAD_SCHEMA: Any = {
    "type": "json_schema",
    "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "^(?=a)a$"}},
}


@dataclass(frozen=True)
class Exported:
    resource: dict[str, Any]
    span: Span

    @property
    def attributes(self) -> dict[str, Any]:
        return _values(self.span.attributes)


def _values(pairs: Any) -> dict[str, Any]:
    def value(pair: KeyValue) -> Any:
        kind = pair.value.WhichOneof("value")
        return getattr(pair.value, kind) if kind else None

    return {pair.key: value(pair) for pair in pairs}


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[Exported] = []
        self.bodies: list[bytes] = []
        self.arrived = threading.Condition()

    def wait_for(self, found: Any, timeout: float = 30.0) -> list[Exported]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: found(self.spans), timeout), [
                s.span.name for s in self.spans
            ]
            return list(self.spans)


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:  # the OTLP/HTTP exporter's one request
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest.FromString(body)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
        with self.server.arrived:
            self.server.bodies.append(body)
            for resource_spans in request.resource_spans:
                resource = _values(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    self.server.spans.extend(Exported(resource, s) for s in scope_spans.spans)
            self.server.arrived.notify_all()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture(scope="module")
def receiver() -> Iterator[_Receiver]:
    with serving(_Receiver()) as server:
        yield server


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("models")
    write_tiny_gguf(directory / "tiny.gguf", name="tiny")
    return directory


@pytest.fixture(scope="module")
def router(receiver: _Receiver, models: Path) -> Iterator[RouterProcess]:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_port}",
        "OTEL_BSP_SCHEDULE_DELAY": "50",  # milliseconds: the test need not wait 5 s per batch
        "PYTHONPROFILEIMPORTTIME": "1",  # shows the SDK imported: the check the off test uses
    }
    args = ["--models-dir", str(models), "--ctx-size", "512", "--api-key", KEY]
    with running_router(args, env) as process:
        yield process


def _openai(router: RouterProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{router.url}/v1", api_key=KEY, max_retries=0)


def _trace(spans: list[Exported], trace_id: bytes) -> list[Exported]:
    return [s for s in spans if s.span.trace_id == trace_id]


def _root_of(spans: list[Exported]) -> Exported:
    (root,) = [s for s in spans if s.span.kind == Span.SpanKind.SPAN_KIND_SERVER]
    return root


def _complete(names: set[str]) -> Any:
    return lambda spans: names <= {s.span.name for s in spans}


@pytest.fixture(scope="module")
def streamed_chat(router: RouterProcess, receiver: _Receiver) -> list[Exported]:
    """The first request: a streamed chat, with the client's traceparent, that waits for the
    model's load. Its whole trace, once exported."""
    traceparent = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
    with _openai(router) as client:
        stream = client.chat.completions.create(
            model="tiny",
            messages=PROMPT,
            max_tokens=3,
            stream=True,
            extra_headers={"traceparent": traceparent},
        )
        assert list(stream)
    names = {"chat tiny", "queue wait", "model load", "prompt processing", "generation"}
    spans = receiver.wait_for(lambda s: _complete(names)(_trace(s, bytes.fromhex(CLIENT_TRACE))))
    return _trace(spans, bytes.fromhex(CLIENT_TRACE))


def test_a_streamed_chat_that_waited_for_a_load_is_one_trace_continuing_the_clients(
    streamed_chat: list[Exported], router: RouterProcess
) -> None:
    root = _root_of(streamed_chat)
    assert root.span.name == "chat tiny"
    assert root.span.parent_span_id == bytes.fromhex(CLIENT_SPAN)
    assert root.resource["service.name"] == "corral"
    children = {s.span.name: s.span for s in streamed_chat if s is not root}
    assert set(children) == {"queue wait", "model load", "prompt processing", "generation"}
    for child in children.values():
        assert child.parent_span_id == root.span.span_id
        assert root.span.start_time_unix_nano <= child.start_time_unix_nano
        assert child.start_time_unix_nano <= child.end_time_unix_nano
        assert child.end_time_unix_nano <= root.span.end_time_unix_nano
    # The load is inside the queue wait; prompt processing comes before generation.
    queue, load = children["queue wait"], children["model load"]
    assert queue.start_time_unix_nano <= load.start_time_unix_nano
    assert load.end_time_unix_nano <= queue.end_time_unix_nano
    prompt, generation = children["prompt processing"], children["generation"]
    assert queue.end_time_unix_nano <= prompt.start_time_unix_nano
    assert prompt.end_time_unix_nano <= generation.start_time_unix_nano
    attributes = root.attributes
    port = int(router.url.rsplit(":", 1)[1])
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "corral"
    assert attributes["gen_ai.request.model"] == attributes["gen_ai.response.model"] == "tiny"
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert 0 < attributes["gen_ai.usage.output_tokens"] <= 3
    assert attributes["http.request.method"] == "POST"
    assert attributes["url.path"] == "/v1/chat/completions"
    assert attributes["http.response.status_code"] == 200
    assert (attributes["server.address"], attributes["server.port"]) == ("127.0.0.1", port)
    assert "error.type" not in attributes
    assert _values(prompt.attributes)["gen_ai.usage.input_tokens"] > 0
    assert _values(generation.attributes)["gen_ai.usage.output_tokens"] > 0


def test_the_worker_gets_the_routers_traceparent_and_tags_its_log_lines_with_it(
    streamed_chat: list[Exported], router: RouterProcess, receiver: _Receiver
) -> None:
    with _openai(router) as client:
        client.chat.completions.create(
            model="tiny",
            messages=PROMPT,
            max_tokens=2,
            response_format=_LOOKAHEAD_SCHEMA,
        )
    warning = router.wait_for_record(
        lambda r: "JSON schema conversion was incomplete" in str(r.get("event"))
    )
    assert warning["source"] == "worker"
    trace_id = bytes.fromhex(warning["trace_id"])
    spans = receiver.wait_for(lambda s: any(x.span.trace_id == trace_id for x in s))
    root = _root_of(_trace(spans, trace_id))
    # A new trace (the client sent no traceparent), whose root span is the worker's parent.
    assert root.span.parent_span_id == b""
    assert warning["parent_span_id"] == root.span.span_id.hex()
    # A whole answer: its prompt processing and generation placed by the worker's timings.
    receiver.wait_for(lambda s: _complete({"prompt processing", "generation"})(_trace(s, trace_id)))


def test_anthropics_and_ollamas_chats_are_chat_operations(
    streamed_chat: list[Exported], router: RouterProcess, receiver: _Receiver
) -> None:
    with anthropic.Anthropic(base_url=router.url, api_key=KEY, max_retries=0) as claude:
        claude.messages.create(model="tiny", max_tokens=2, messages=PROMPT)
    with ollama.Client(host=router.url, timeout=120, headers=bearer(KEY)) as official:
        official.chat(model="tiny", messages=PROMPT, options={"num_predict": 2})

    def routes(spans: list[Exported]) -> dict[str, dict[str, Any]]:
        return {
            s.attributes["url.path"]: s.attributes
            for s in spans
            if s.span.kind == Span.SpanKind.SPAN_KIND_SERVER
        }

    spans = receiver.wait_for(lambda s: {"/v1/messages", "/api/chat"} <= set(routes(s)))
    for path in ("/v1/messages", "/api/chat"):
        attributes = routes(spans)[path]
        assert attributes["gen_ai.operation.name"] == "chat", path
        assert attributes["gen_ai.usage.output_tokens"] > 0, path


def test_no_key_is_ever_exported_and_the_sdk_was_loaded(
    streamed_chat: list[Exported], router: RouterProcess, receiver: _Receiver
) -> None:
    with receiver.arrived:
        assert not any(KEY.encode() in body for body in receiver.bodies)
    # The import log the off test reads does show the SDK when tracing is on.
    assert "opentelemetry.sdk.trace" in router.log_text()


def test_without_an_endpoint_the_router_never_imports_the_sdk(models: Path) -> None:
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    hidden = {k: "" for k in os.environ if k.startswith("OTEL_")}  # a developer's own
    with running_router(["--models-dir", str(models), "--ctx-size", "512"], env | hidden) as r:
        with _openai(r) as client:
            client.chat.completions.create(
                model="tiny",
                messages=PROMPT,
                max_tokens=2,
                extra_headers={"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"},
            )
        r.stop()
        log = r.log_text()
    assert "import time:" in log  # the import log is there to read
    # Litestar tries its own OpenTelemetry plugin once, as it builds the app, and gives up for
    # want of the ASGI instrumentation: the namespace and semconv, never the API, SDK, exporter.
    for module in ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.trace"):
        assert module not in log
