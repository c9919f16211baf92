"""How large a request may be (docs/protocol.md §8): its body, its headers, its URL.

The body limit (:class:`BodyLimit`, built from the settings) is Litestar's
``request_max_body_size`` (set in :mod:`router.app`): it refuses a
``Content-Length`` over the limit before reading anything and counts a chunked body's bytes as
they arrive, so nothing larger is ever buffered. Only its message is Corral's, so that the 413
says which flag to raise.

The URL and header bounds are enforced while uvicorn parses the request, since by the time the
app sees a request its headers are already in memory. httptools keeps a header line whole until
its end before it calls back, so the bytes of an unfinished head are counted as they arrive too.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final

import msgspec
from litestar import Request, Response
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.types import ExceptionHandlersMap

from corral.children.environment import MAX_BODY_ENV
from corral.http.errors import ApiError, ErrorEnvelope, error_response
from corral.http.header_spelling import SpelledHeadersProtocol

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_HEAD_BYTES",
    "MAX_URL_BYTES",
    "BodyLimit",
    "BoundedHttpToolsProtocol",
    "format_size",
]

# As common front ends allow (nginx: 8 KiB lines): far beyond any URL the API needs.
MAX_URL_BYTES: Final = 8 << 10
# All header lines together; a browser's cookies for a shared host name fit with room to spare.
MAX_HEADER_BYTES: Final = 64 << 10
# The whole head as received: the two above, the request line and the separators.
MAX_HEAD_BYTES: Final = MAX_URL_BYTES + MAX_HEADER_BYTES + (8 << 10)


class _Refused(Exception):
    """Raised in a parser callback to stop parsing; the refusal itself is kept on the protocol."""


def format_size(size: int) -> str:
    """``64 MiB`` for 64 << 20; sizes that are not whole units stay in bytes."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} bytes"


@dataclass(frozen=True, slots=True)
class BodyLimit:
    """The bytes a request body may have (``--max-body``)."""

    size: int

    def handlers(self) -> ExceptionHandlersMap:
        """Litestar's 413 in the API's error JSON, naming the flag to raise."""
        message = f"request body is larger than the router's limit of {format_size(self.size)} "
        message += "(--max-body)"

        def too_large(_: Request[Any, Any, Any], __: Exception) -> Response[ErrorEnvelope]:
            return error_response(ApiError(413, message))

        return {RequestEntityTooLarge: too_large}

    def pass_to_workers(self, environ: MutableMapping[str, str]) -> None:
        """Inherited by every worker (docs/protocol.md §8): none refuses a body the router
        accepted."""
        environ[MAX_BODY_ENV] = str(self.size)


class BoundedHttpToolsProtocol(SpelledHeadersProtocol):
    """uvicorn's httptools protocol with a bound on the request line and the headers.

    httptools (llhttp) itself buffers headers of any size (megabytes were accepted), so the
    parser's callbacks count the bytes and stop the parse once a bound is passed. uvicorn turns
    any parser error into a plain-text 400 and closes the connection; the error that was ours
    is answered instead as 414 or 431 with the error JSON.
    """

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._head_received: int | None = None  # bytes of an unfinished head; None: none

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._head_received is None:
            return
        # The whole chunk counts: only a pipelined request's body could come before the head
        # in it, and clients do not pipeline bodies.
        self._head_received += len(data)
        if self._head_received > MAX_HEAD_BYTES and not self.transport.is_closing():
            limit = format_size(MAX_HEADER_BYTES)
            self.answer_and_close(ApiError(431, f"the request's headers are larger than {limit}"))

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._head_received = 0
        self._refusal: ApiError | None = None

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_URL_BYTES:
            self._refusal = ApiError(414, f"the URL is longer than {format_size(MAX_URL_BYTES)}")
            raise _Refused

    def on_headers_complete(self) -> None:
        self._head_received = None
        super().on_headers_complete()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value) + 4  # ": " and CRLF, as sent
        if self._header_bytes > MAX_HEADER_BYTES:
            limit = format_size(MAX_HEADER_BYTES)
            self._refusal = ApiError(431, f"the request's headers are larger than {limit}")
            raise _Refused
        super().on_header(name, value)

    def send_400_response(self, msg: str) -> None:
        refusal = getattr(self, "_refusal", None)
        if refusal is None:
            super().send_400_response(msg)
            return
        self.answer_and_close(refusal)

    def answer(self, error: ApiError, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
        """Write ``error`` as the error JSON, from outside the app (which has not seen the
        request), saying that the connection closes."""
        body = msgspec.json.encode(error.envelope())
        head = [f"HTTP/1.1 {error.status} {HTTPStatus(error.status).phrase}".encode()]
        head += [name + b": " + value for name, value in self.server_state.default_headers]
        head += [name + b": " + value for name, value in extra]
        head += [
            b"content-type: application/json",
            b"content-length: " + str(len(body)).encode(),
            b"connection: close",
        ]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)

    def answer_and_close(self, error: ApiError) -> None:
        """Answer ``error`` and close, or only close when an answer is already under way (a
        pipelined request's): nothing else can be said then."""
        if self.cycle is None or not self.cycle.response_started or self.cycle.response_complete:
            self.answer(error)
        self.transport.close()
