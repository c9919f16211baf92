"""How ``corral ls/ps/rm`` find and ask a running router: its address and its ``/models``.

The address defaults to what ``corral serve`` would listen on in this environment
(``LLAMA_ARG_HOST``/``LLAMA_ARG_PORT``), so a router started with a non-default port is found
without ``--url``, which may leave out the scheme (``127.0.0.1:8080``: http is meant). A 401
names the flag and the variable that take the key.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

__all__ = [
    "RouterRefused",
    "RouterUnavailable",
    "default_router_url",
    "fetch_listing",
    "fetch_models",
    "router_key",
    "router_url",
]

_ANY_ADDRESS = {"0.0.0.0", "::", ""}  # listening everywhere: reachable on loopback


class RouterUnavailable(Exception):
    """No router answered, or it refused; the message says which and what to do."""


class RouterRefused(RouterUnavailable):
    """A router answered, but not with its listing (it wants a key, or failed): unlike one that
    is not there, worth telling whoever asked even where the listing was optional."""


def router_url(given: str) -> str:
    """``--url`` as typed: ``host:port`` without a scheme means http, as curl takes it."""
    given = given.strip()
    return given if "://" in given else f"http://{given}"


def default_router_url() -> str:
    host = os.environ.get("LLAMA_ARG_HOST", "127.0.0.1").strip()
    port = os.environ.get("LLAMA_ARG_PORT", "8080").strip() or "8080"
    host = "127.0.0.1" if host in _ANY_ADDRESS else host
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def router_key(given: str | None) -> str:
    """The key to send: the flag's, else ``LLAMA_API_KEY``'s first (it may list several)."""
    value = given if given is not None else os.environ.get("LLAMA_API_KEY", "")
    return value.split(",")[0].strip()


def fetch_models(url: str, key: str, *, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The router's ``/models`` entries; raises :class:`RouterUnavailable`."""
    data: list[dict[str, Any]] = fetch_listing(url, key, timeout=timeout)["data"]
    return data


def fetch_listing(url: str, key: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """The router's whole ``/models`` answer (entries, and the GPUs it sees); raises
    :class:`RouterUnavailable`."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(f"{url.rstrip('/')}/models", headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise RouterUnavailable(f"cannot reach {url}: {exc}") from None
    if response.status_code == 401:
        what = "refused the API key" if key else "wants an API key"
        raise RouterRefused(f"{url} {what}: pass it with --api-key KEY or set LLAMA_API_KEY")
    if response.status_code != 200:
        raise RouterRefused(f"{url} answered {response.status_code}")
    listing: dict[str, Any] = response.json()
    return listing
