"""OpenTelemetry traces of the router's requests, when asked for (docs/operations.md, Traces).

Off, the cost is nil: :func:`tracer_for` gives nothing to call, the SDK is never imported, and
the relay's hook finds no traced record. On, each request's record (router/observe/requests.py,
filled as it runs for the access log and the activity view) is made into spans after the fact
by :mod:`.spans` and sent by :mod:`.export`; :mod:`.context` has the ids the worker is told.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from litestar.types import Scope

from router.observe.requests import RequestRecord

__all__ = ["tracer_for", "traces_endpoint"]

_OFF_WORDS = ("true", "1", "yes", "on")


def traces_endpoint(base: str | None, env: Mapping[str, str]) -> str | None:
    """The OTLP/HTTP traces URL, or ``None`` when tracing is off.

    ``base`` is ``--otel-endpoint`` (or its variable, ``OTEL_EXPORTER_OTLP_ENDPOINT``): a
    collector's base URL, to which ``/v1/traces`` is added, as the SDK does.
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, the whole traces URL, wins when set, as the SDK
    ranks a signal's own variable. ``OTEL_SDK_DISABLED=true`` and ``OTEL_TRACES_EXPORTER=none``
    turn tracing off whatever else is set.
    """
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in _OFF_WORDS:
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    whole = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if whole:
        return whole
    base = (base or "").strip()
    return base.rstrip("/") + "/v1/traces" if base else None


def tracer_for(
    base: str | None, env: Mapping[str, str]
) -> Callable[[RequestRecord, Scope], None] | None:
    """What makes a finished request's record into a trace when :func:`traces_endpoint` says
    so; else None."""
    endpoint = traces_endpoint(base, env)
    if endpoint is None:
        return None
    from router.observe.tracing.export import tracer  # the SDK: imported only when on

    return tracer(endpoint)
