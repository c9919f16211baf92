"""http(s) media, downloaded by the worker with a size and a time limit, from public hosts only.

As llama-server's ``handle_media`` (``tools/server/server-common.cpp``), with a size and a time
limit; unlike it, a URL whose host resolves to a private, loopback, link-local or otherwise
non-public address is refused (``--media-allow-private`` allows them), so that a client cannot
make the worker reach the machine's own services or a cloud metadata endpoint
(docs/security.md, "Media and JSON schemas in workers").

The check holds for what is connected to, not only for what was named: each hop of a redirect
is resolved and checked again, and the connection goes to an address that was checked (the
request is sent to that address, with the host's name as ``Host`` and as the TLS server name),
so a name that resolves to another address a moment later (DNS rebinding) gains nothing. A
refusal says only that: no address, status or timing of the private host reaches the client.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING

import anyio

from worker.host.errors import InvalidInput
from worker.media.rules import ByteCap

if TYPE_CHECKING:
    import httpx

__all__ = ["download"]

_MAX_HOPS = 10  # redirects followed, as curl's and browsers' order of magnitude
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def _is_private(address: str) -> bool:
    """Whether ``address`` is anything but a public unicast address (loopback, RFC 1918,
    link-local such as 169.254.169.254, carrier-grade NAT, unspecified, multicast, reserved)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    return not ip.is_global or ip.is_multicast


def _host(url: httpx.URL) -> str:
    return url.raw_host.decode("ascii")  # IDNA-encoded; an IPv6 literal without brackets


async def _addresses(url: httpx.URL, field: str, allow_private: bool) -> list[str]:
    """The addresses ``url``'s host resolves to, all checked; 400 if any is private."""
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        found = await anyio.getaddrinfo(_host(url), port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise InvalidInput(f"{field}: failed to download {url}: cannot resolve the host") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    if not allow_private and any(map(_is_private, addresses)):
        raise InvalidInput(f"{field}: refused: private address (see --media-allow-private)")
    return addresses


async def _send(client: httpx.AsyncClient, url: httpx.URL, addresses: list[str]) -> httpx.Response:
    """A GET of ``url`` sent to the first of ``addresses`` that accepts a connection."""
    import httpx

    headers = {"Host": url.netloc.decode("ascii"), "Accept-Encoding": "identity"}
    for index, address in enumerate(addresses):
        request = client.build_request(
            "GET",
            url.copy_with(host=f"[{address}]" if ":" in address else address),
            headers=headers,
            extensions={"sni_hostname": _host(url)},  # the certificate is checked for the name
        )
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError:
            if index == len(addresses) - 1:
                raise
    raise httpx.ConnectError("no address")  # getaddrinfo never answers with none


async def _body(response: httpx.Response, field: str, cap: ByteCap) -> bytes:
    """The body, refused as soon as it passes ``cap``: before reading when it says its size."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap.bytes:
        raise InvalidInput(f"{field}: {cap.refusal}")
    body = bytearray()
    # Raw bytes, as asked by Accept-Encoding: no decompression that could multiply them.
    async for piece in response.aiter_raw():
        body += piece
        if len(body) > cap.bytes:
            raise InvalidInput(f"{field}: {cap.refusal}")
    return bytes(body)


async def download(
    url: str, field: str, cap: ByteCap, wait_seconds: float, *, allow_private: bool = False
) -> bytes:
    """The body at ``url`` (redirects followed), at most ``cap.bytes``; the wait applies to
    connecting and to each read. Every failure is the client's error (400)."""
    import httpx  # lazily: 2 MiB of a worker's memory for a rare request (docs/benchmarks.md)

    try:
        target = httpx.URL(url)
        async with httpx.AsyncClient(timeout=wait_seconds) as client:
            for _ in range(_MAX_HOPS + 1):
                addresses = await _addresses(target, field, allow_private)
                response = await _send(client, target, addresses)
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        target = target.join(location)
                        if target.scheme not in ("http", "https"):
                            raise InvalidInput(f"{field}: failed to download {url}: bad redirect")
                        continue
                    if not 200 <= response.status_code < 300:
                        raise InvalidInput(
                            f"{field}: failed to download {url}: HTTP {response.status_code}"
                        )
                    return await _body(response, field, cap)
                finally:
                    await response.aclose()
            raise InvalidInput(f"{field}: failed to download {url}: too many redirects")
    except httpx.InvalidURL as exc:  # the URL given, or a redirect's Location
        raise InvalidInput(f"{field}: invalid URL: {exc}") from None
    except httpx.TimeoutException:
        raise InvalidInput(f"{field}: {url} did not answer within {wait_seconds:g} s") from None
    except httpx.HTTPError as exc:
        raise InvalidInput(f"{field}: failed to download {url}: {exc}") from None
