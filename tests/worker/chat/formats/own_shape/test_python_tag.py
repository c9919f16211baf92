"""Llama 3.1's built-in tool calls after ``<|python_tag|>``, as llama.cpp's Llama 3.x parser
with built-in tools reads them, and its custom JSON calls beside them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.output_splits import assert_output_parses_to
from worker.chat.formats import OutputParser, OutputStream, detect_format
from worker.chat.formats.own_shape.python_tag import PythonTagSyntax

TEMPLATES = Path(__file__).parents[3] / "template_goldens"


def _tool(name: str, key: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


TOOLS = [
    _tool("brave_search", "query"),
    _tool("wolfram_alpha", "query"),
    _tool("code_interpreter", "code"),
    _tool("get_weather", "city"),
]
LLAMA_3_1 = detect_format("<|start_header_id|>ipython<|python_tag|>")
assert isinstance(LLAMA_3_1.tools, PythonTagSyntax)
PARSER = OutputParser(tools=LLAMA_3_1.tools.with_tools(TOOLS))
CASES: list[tuple[str, str, list[tuple[str, Any]]]] = [
    ("Hello, world!", "Hello, world!", []),
    ('<|python_tag|>brave_search.call(query="weather in Paris")', "",
     [("brave_search", {"query": "weather in Paris"})]),
    ('<|python_tag|>wolfram_alpha.call(query="solve x^3 - 4x^2 + 6x - 24 = 0")', "",
     [("wolfram_alpha", {"query": "solve x^3 - 4x^2 + 6x - 24 = 0"})]),
    ("Let me look.<|python_tag|>brave_search.call(query=\"Paris\", count=3)", "Let me look.",
     [("brave_search", {"query": "Paris", "count": 3})]),
    ('<|python_tag|>code_interpreter.call(code="print(2 + 2)")', "",
     [("code_interpreter", {"code": "print(2 + 2)"})]),
    ("<|python_tag|>import math\nprint(math.pi)", "",  # code for the request's code tool
     [("code_interpreter", {"code": "import math\nprint(math.pi)"})]),
    ('{"name": "get_weather", "parameters": {"city": "Oslo"}}', "",
     [("get_weather", {"city": "Oslo"})]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "content", "calls"), CASES)
def test_whole_and_split_at_every_position(
    text: str, content: str, calls: list[tuple[str, Any]]
) -> None:
    assert_output_parses_to(PARSER, text, content=content, calls=calls)


@pytest.mark.parametrize(
    "text",
    ['<|python_tag|>brave_search.call(query="Paris"',  # never closes
     '<|python_tag|>brave_search.call(query=Paris)',  # not JSON
     '<|python_tag|>brave_search.call(query="Paris") and more'],
)  # fmt: skip
def test_a_malformed_builtin_call_is_text(text: str) -> None:
    parser = OutputParser(tools=PARSER.tools.with_tools(TOOLS[:2]))  # type: ignore[union-attr]
    message = parser.whole(text)
    assert (message.content, message.tool_calls) == (text, [])


def test_without_builtin_tools_the_tag_is_text() -> None:
    parser = OutputParser(tools=PARSER.tools.with_tools(TOOLS[3:]))  # type: ignore[union-attr]
    text = '<|python_tag|>brave_search.call(query="Paris")'
    message = parser.whole(text)
    assert (message.content, message.tool_calls) == (text, [])


def test_a_stream_does_not_show_the_tag_while_it_arrives() -> None:
    stream = OutputStream(PARSER)
    assert stream.feed("Sure.<|python").content == "Sure."
    assert stream.feed('_tag|>brave_search.call(query="x")').content == ""
    assert [(i, c.name) for i, c in stream.finish().tool_calls] == [(0, "brave_search")]


@pytest.mark.parametrize(
    ("template", "builtin"),
    [("meta-llama-Llama-3.1-8B-Instruct", True), ("meta-llama-Llama-3.3-70B-Instruct", True),
     ("meta-llama-Llama-3.2-3B-Instruct", False)],
)  # fmt: skip
def test_llama_3_1_and_3_3_templates_get_the_builtin_calls(template: str, builtin: bool) -> None:
    source = json.loads((TEMPLATES / f"{template}.json").read_text())["source"]
    chat_format = detect_format(source)
    assert chat_format.name == "Llama 3.x"
    assert isinstance(chat_format.tools, PythonTagSyntax) is builtin
