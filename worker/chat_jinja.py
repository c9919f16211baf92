"""Chat templates rendered as llama-cpp-python's ``Jinja2ChatFormatter`` renders them.

The same sandboxed Jinja environment, filters and variables (Transformers' chat-template
conventions), without importing ``llama_cpp.llama_chat_format``, which pulls in the package's
whole high-level layer and numpy (see :mod:`worker.llama_bindings`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, NamedTuple

import jinja2
import jinja2.ext
import jinja2.parser
import jinja2.sandbox
from jinja2 import nodes

__all__ = ["Jinja2ChatFormatter", "RenderedChat"]


class RenderedChat(NamedTuple):
    prompt: str


class _IgnoreGenerationTags(jinja2.ext.Extension):
    """Pass-through for Hugging Face's ``{% generation %}`` chat-template tag."""

    tags = {"generation"}  # noqa: RUF012 (jinja's own class attribute)

    def parse(self, parser: jinja2.parser.Parser) -> list[nodes.Node]:
        parser.stream.skip(1)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # Transformers' chat-template JSON: non-ASCII kept, no HTML escaping.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    raise ValueError(message)


def _strftime_now(pattern: str) -> str:
    return datetime.now().strftime(pattern)


class Jinja2ChatFormatter:
    def __init__(self, template: str, eos_token: str, bos_token: str) -> None:
        environment = jinja2.sandbox.ImmutableSandboxedEnvironment(
            loader=jinja2.BaseLoader(),
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[_IgnoreGenerationTags, jinja2.ext.loopcontrols],
        )
        environment.filters["tojson"] = _tojson
        self._template = environment.from_string(template)
        self._eos_token, self._bos_token = eos_token, bos_token

    def __call__(self, *, messages: list[dict[str, Any]], **extra: Any) -> RenderedChat:
        variables = {"functions": None, "function_call": None, "tools": None, "tool_choice": None}
        prompt = self._template.render(
            messages=messages,
            eos_token=self._eos_token,
            bos_token=self._bos_token,
            raise_exception=_raise_exception,
            add_generation_prompt=True,
            strftime_now=_strftime_now,
            **{**variables, **extra},
        )
        return RenderedChat(prompt)
