"""OpenTelemetry traces of the router's requests, when asked for (docs/operations.md, Traces).

Off, the cost is nil: :func:`with_tracing` returns the app unchanged, the SDK is never imported,
and the relay's hooks find no capture. On, :mod:`.capture` records each request's times as it
runs, :mod:`.spans` builds its spans after the fact and :mod:`.export` sends them.
"""

from __future__ import annotations

from collections.abc import Mapping

from litestar.types import ASGIApp

__all__ = ["traces_endpoint", "with_tracing"]

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


def with_tracing(app: ASGIApp, base: str | None, env: Mapping[str, str]) -> ASGIApp:
    """``app``, traced when :func:`traces_endpoint` says so; else ``app`` itself."""
    endpoint = traces_endpoint(base, env)
    if endpoint is None:
        return app
    from router.observe.tracing.export import traced  # the SDK: imported only when on

    return traced(app, endpoint)
