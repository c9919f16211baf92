"""jinja2, configured to render chat templates as llama.cpp's own Jinja engine does.

llama.cpp (``common/jinja/``) trims and left-strips blocks, lets undefined values chain
(``a.b.c`` of an undefined ``a`` is undefined, not an error), lets templates mutate lists and
dicts (``list.append``), prints ``tojson`` without HTML escaping and with Python's separators,
and knows ``raise_exception`` and ``strftime_now``. docs/templates.md lists what still differs.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.parser import Parser
from jinja2.sandbox import SandboxedEnvironment

__all__ = ["EXTENSIONS", "TemplateRaised", "compile_template", "display_text", "to_json"]


class TemplateRaised(Exception):
    """The template itself refused the conversation (``raise_exception``)."""


def _raise_exception(message: str) -> None:
    raise TemplateRaised(f"Jinja Exception: {message}")


def _plain(value: Any) -> Any:
    """JSON's view of a value: generators (``map(...)``) become lists, undefined null."""
    if isinstance(value, jinja2.Undefined):
        return None
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping | list):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _builtin(value: Any) -> Any:
    """Plain dicts and lists, read through the base classes so that reading them for JSON
    is not mistaken for the template using them (capability probes watch subclasses)."""
    if isinstance(value, dict):
        return {key: _builtin(item) for key, item in dict.items(value)}
    if isinstance(value, list):
        return [_builtin(item) for item in list.__iter__(value)]
    return value


def to_json(
    value: Any,
    indent: int | None = None,
    separators: tuple[str, str] | list[str] | None = None,
    ensure_ascii: bool = False,
    sort_keys: bool = False,
) -> str:
    """``tojson`` as llama.cpp writes it: keys in their order, nothing escaped for HTML."""
    if sort_keys:
        raise jinja2.TemplateError("tojson sort_keys=true not implemented")
    item, key = (", " if indent is None else ","), ": "
    if separators:
        item = separators[0]
        key = separators[1] if len(separators) > 1 else key
    return json.dumps(
        _builtin(value),
        indent=indent,
        separators=(item, key),
        ensure_ascii=ensure_ascii,
        default=_plain,
    )


def _quoted(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if "'" in value else f"'{value}'"
    return display_text(value)


def display_text(value: Any) -> str:
    """How llama.cpp prints a value with ``{{ … }}`` or ``|string``."""
    if isinstance(value, Mapping):
        pairs = dict.items(value) if isinstance(value, dict) else value.items()
        return "{" + ", ".join(f"{_quoted(k)}: {_quoted(v)}" for k, v in pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_quoted(v) for v in list.__iter__(value)) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_quoted(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if value is None:
        return "None"
    return str(value)


def _finalize(value: Any) -> Any:
    if isinstance(value, Mapping | list | tuple):
        return display_text(value)
    return value


class _GenerationBlock(Extension):
    """``{% generation %}…{% endgeneration %}`` (training masks in HF templates) just renders
    its body, as in llama.cpp."""

    tags = {"generation"}  # noqa: RUF012 (jinja2 declares it a plain set attribute)

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


EXTENSIONS = ("jinja2.ext.loopcontrols", _GenerationBlock)

Observer = Callable[[str, Any], None]
"""Told of each value a template dumps (``tojson``, ``string``), tests (``is string``) or
filters as a list (``selectattr``, ``map``…): how capability probes see what a template reads."""


class _LlamaSandbox(SandboxedEnvironment):
    """``+`` as llama.cpp does it: text plus anything is text, null or undefined adding
    nothing (``'): ' + param.description`` renders when there is no description)."""

    intercepted_binops = frozenset({"+"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if isinstance(left, str) or isinstance(right, str):
            return _as_text(left) + _as_text(right)
        return super().call_binop(context, operator, left, right)


def _as_text(value: Any) -> str:
    if value is None or isinstance(value, jinja2.Undefined):
        return ""
    return value if isinstance(value, str) else display_text(value)


def _environment(
    now: Callable[[], datetime.datetime], observe: Observer | None
) -> SandboxedEnvironment:
    # Not the Immutable sandbox: real templates build lists with append (Kimi K2).
    env = _LlamaSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.ChainableUndefined,
        finalize=_finalize,
        extensions=EXTENSIONS,
    )
    env.filters["tojson"] = to_json
    env.filters["string"] = display_text
    env.filters["safe"] = str  # no HTML escaping anywhere, so nothing to mark safe
    if observe is not None:
        _observe_filters(env, observe)
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: now().strftime(fmt)
    return env


def _observe_filters(env: SandboxedEnvironment, observe: Observer) -> None:
    def watched(name: str, run: Callable[..., Any]) -> Callable[..., Any]:
        passes = getattr(run, "jinja_pass_arg", None)  # context/environment comes first

        def filter_or_test(*args: Any, **kwargs: Any) -> Any:
            observe(name, args[1 if passes is not None else 0])
            return run(*args, **kwargs)

        if passes is not None:
            filter_or_test.jinja_pass_arg = passes  # type: ignore[attr-defined]
        return filter_or_test

    for name in ("tojson", "string", "selectattr", "rejectattr", "select", "reject", "map"):
        env.filters[name] = watched(name, env.filters[name])
    env.tests["string"] = watched("is_string", cast(Callable[..., Any], env.tests["string"]))


def compile_template(
    source: str, now: Callable[[], datetime.datetime], observe: Observer | None = None
) -> Callable[[dict[str, Any]], str]:
    """A render function for ``source``; ``now`` is the time ``strftime_now`` reads."""
    template = _environment(now, observe).from_string(source)
    return template.render
