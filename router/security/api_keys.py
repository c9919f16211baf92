"""API keys with a scope and limits (docs/protocol.md §8): the key file and who may do what.

A key-file line is ``KEY [admin|inference] [concurrency=N] [rpm=N] [class=interactive|batch]
[cache=GROUP]``.
``admin`` (the default, and every ``--api-key``) may do everything; ``inference`` may use the
inference and stream routes and list models, but not manage them. Which routes manage is said
by the routes themselves (:func:`admin_only` in their ``opt``), so a new route declares it where
it is written, and a test lists them all. ``class`` places the key's requests in the
scheduler's order (router/scheduling/waiting_line.py): interactive (the default) before batch.
``cache`` names a group of keys that share their prompt caches (router/security/cache_scope.py);
without it a key's caches are its own.

A key is a secret: it never reaches a log or an error message. :func:`key_id` (a short hash)
names a key where one must be told apart from another.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl

from litestar.types import Scope

from corral.http.worker_routes import WorkerRoute
from router.scheduling.waiting_line import Priority

__all__ = [
    "ADMIN_OPT",
    "UNCOUNTED_OPT",
    "ApiKey",
    "ApiKeyFileError",
    "KeyScope",
    "admin_only",
    "is_uncounted",
    "key_id",
    "load_api_keys",
    "needs_admin",
    "parse_key_line",
    "parse_list",
    "relay_opt",
    "uncounted",
]

# The key in a route handler's ``opt`` that marks it as management: True, or the name of a
# query parameter that makes a request management when it has a non-empty value (?reload=1).
ADMIN_OPT: Final = "corral_admin"
# The key in a route handler's ``opt`` of a request that takes no ``concurrency`` slot.
UNCOUNTED_OPT: Final = "corral_uncounted"


_SCOPES: Final = ("admin", "inference")
_LIMIT_PREFIXES: Final = ("concurrency=", "rpm=", "class=", "cache=")
_GROUP: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")


class ApiKeyFileError(Exception):
    """An ``--api-key-file`` that cannot be read or parsed: the router must not start."""


class KeyScope(enum.StrEnum):
    ADMIN = "admin"
    INFERENCE = "inference"


@functools.lru_cache(maxsize=256)  # asked several times per request (the queue, the record)
def key_id(secret: str) -> str:
    """A short, stable name for a key in logs and in ``GET /v1/key``; not enough to guess it."""
    return hashlib.sha256(secret.encode()).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class ApiKey:
    # Kept out of repr so that logging a key's settings never prints it.
    secret: str = field(repr=False)
    scope: KeyScope = KeyScope.ADMIN
    concurrency: int | None = None  # requests in flight at once (streams until they end)
    rpm: int | None = None  # requests per minute (token bucket)
    priority: Priority = Priority.INTERACTIVE  # the key file's class=
    cache_group: str | None = None  # the key file's cache=: keys that share prompt caches

    @property
    def id(self) -> str:
        return key_id(self.secret)

    @property
    def limited(self) -> bool:
        return self.concurrency is not None or self.rpm is not None


def parse_list(value: str) -> list[str]:
    """Split a comma list as the flags take it, dropping blanks."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _positive(name: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{name} must be a whole number of at least 1")
    return int(value)


def parse_key_line(line: str) -> ApiKey:
    """One key-file line (already stripped, not a comment). ``ValueError`` never holds the key."""
    secret, *words = line.split()
    if secret in _SCOPES or secret.startswith(_LIMIT_PREFIXES):
        # A line of options alone: its key was left out, and an option must not become a key.
        raise ValueError("the line starts with an option, not a key")
    scope = KeyScope.ADMIN
    limits: dict[str, int] = {}
    priority: Priority | None = None
    group: str | None = None
    seen_scope = False
    for word in words:
        name, equals, value = word.partition("=")
        if not equals and word in _SCOPES and not seen_scope:
            scope, seen_scope = KeyScope(word), True
        elif equals and name in ("concurrency", "rpm") and name not in limits:
            limits[name] = _positive(name, value)
        elif equals and name == "class" and priority is None and value in tuple(Priority):
            priority = Priority(value)
        elif equals and name == "cache" and group is None and _GROUP.fullmatch(value):
            group = value
        else:
            # The word is the file's text but not the key, so it may be shown.
            raise ValueError(
                f"unexpected '{word}' (expected admin or inference, concurrency=N, rpm=N, "
                "class=interactive or class=batch, cache=GROUP (letters, digits, . _ -), each "
                "at most once)"
            )
    return ApiKey(
        secret,
        scope,
        limits.get("concurrency"),
        limits.get("rpm"),
        priority or Priority.INTERACTIVE,
        group,
    )


def _read_key_file(path: Path) -> list[ApiKey]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ApiKeyFileError(f"cannot read API key file {path}: {reason}") from None
    keys: list[ApiKey] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            keys.append(parse_key_line(line))
        except ValueError as exc:
            raise ApiKeyFileError(f"API key file {path}, line {number}: {exc}") from None
    return keys


def load_api_keys(keys: Iterable[str], files: Iterable[Path]) -> tuple[ApiKey, ...]:
    """Keys from ``--api-key`` comma lists (admin) and ``--api-key-file`` files, in order.

    A key given twice the same way counts once; given twice with different scopes or limits it
    is a startup error, since either reading could be the one that was meant.
    """
    found = [ApiKey(secret) for value in keys for secret in parse_list(value)]
    for path in files:
        found += _read_key_file(path)
    unique: dict[str, ApiKey] = {}
    for key in found:
        known = unique.setdefault(key.secret, key)
        if known != key:
            raise ApiKeyFileError(
                f"API key {key.id} (sha256 prefix) is given twice with different scopes or limits"
            )
    return tuple(unique.values())


def admin_only(when_query: str | None = None) -> dict[str, Any]:
    """The ``opt`` of a management route; ``when_query`` limits it to requests with that
    query parameter set (``GET /models?reload=1`` re-reads the sources, a plain list does not)."""
    return {ADMIN_OPT: when_query or True}


def needs_admin(scope: Scope) -> bool:
    """Whether the route a request matched is management (see :func:`admin_only`)."""
    handler = scope.get("route_handler")
    opt: Mapping[str, Any] = getattr(handler, "opt", None) or {}
    marker = opt.get(ADMIN_OPT)
    if marker is True:
        return True
    if isinstance(marker, str):
        # Any non-empty value counts, as the handler reads it: being stricter than it is safe.
        query = scope.get("query_string", b"").decode("latin-1")
        return any(name == marker and value for name, value in parse_qsl(query, True))
    return False


def uncounted() -> dict[str, Any]:
    """The ``opt`` of a route that takes no ``concurrency`` slot (``rpm`` still applies): the
    resumable-stream routes, which start no generation. A generation is counted once, by its
    POST, for as long as it runs (docs/operations.md); its key must still be able to replay it
    or stop it while it does."""
    return {UNCOUNTED_OPT: True}


def relay_opt(route: WorkerRoute) -> dict[str, Any]:
    """The ``opt`` of the router's route for a worker's: management and counting as the one
    route list says (corral/http/worker_routes.py), so the worker's own check agrees."""
    return {**(admin_only() if route.admin else {}), **({} if route.counted else uncounted())}


def is_uncounted(scope: Scope) -> bool:
    """Whether the route a request matched is :func:`uncounted`."""
    opt: Mapping[str, Any] = getattr(scope.get("route_handler"), "opt", None) or {}
    return opt.get(UNCOUNTED_OPT) is True
