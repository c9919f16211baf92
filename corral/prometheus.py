"""Prometheus's text exposition format, written by hand for the router's and workers' metrics.

A few dozen series do not justify a dependency; the tests parse the output with
prometheus_client's own parser to keep it honest.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["escape_label", "prometheus_family"]


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_family(
    name: str, kind: str, help_: str, samples: Iterable[tuple[str, float]]
) -> list[str]:
    """One metric family in the text exposition format; samples are (labels, value)."""
    lines = [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    lines += [f"{name}{labels} {_number(value)}" for labels, value in samples]
    return lines


def _number(value: float) -> str:
    # Exact: "{:g}" keeps six digits, which rounds byte counts and long-running counters.
    return str(int(value)) if float(value).is_integer() else repr(float(value))
