"""What a chat template can do, found by running it as llama.cpp does (``common/jinja/caps.cpp``).

llama.cpp renders a few probe conversations and watches which input values the template
touched: a template that never reads the system message's content does not support the system
role, one that never reads ``tools[0].function.name`` does not describe tools, and so on. The
probes here are the same conversations; "touched" is a read of the key (``m.content``,
``m['content']``, ``m.get('content')``), iterating a mapping's items, or ``tojson``/``string``
of a value that contains it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, SupportsIndex

import jinja2
import jinja2.meta

from worker.templates import jinja_engine

__all__ = ["PRESERVE_ON", "TemplateCaps", "probe_caps"]


@dataclass(frozen=True, slots=True)
class TemplateCaps:
    supports_string_content: bool = True
    supports_typed_content: bool = False
    supports_tools: bool = True
    supports_tool_calls: bool = True
    supports_parallel_tool_calls: bool = True
    supports_system_role: bool = True
    supports_preserve_reasoning: bool = False
    supports_reasoning_effort: bool = False
    supports_object_arguments: bool = False

    def as_dict(self) -> dict[str, bool]:
        return asdict(self)


class _Watched(dict[str, Any]):
    """A mapping that remembers which keys the template read."""

    def __init__(self, items: dict[str, Any]) -> None:
        super().__init__({key: _watch(value) for key, value in items.items()})
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def items(self) -> Any:
        self.read.update(self.keys())
        return super().items()

    def values(self) -> Any:
        self.read.update(self.keys())
        return super().values()


class _WatchedList(list[Any]):
    """Typed message content (a list of parts) that remembers being used as a list."""

    tested_string = False
    used_as_list = False

    def __getitem__(self, index: Any) -> Any:
        self.used_as_list = True
        return list.__getitem__(self, index)

    def __iter__(self) -> Iterator[Any]:
        self.used_as_list = True
        return list.__iter__(self)


class _WatchedText(str):
    """Message content that remembers being tested as a string or used as a list."""

    tested_string = False
    used_as_list = False

    def __getitem__(self, index: SupportsIndex | slice) -> str:
        if not isinstance(index, slice):
            self.used_as_list = True
        return str.__getitem__(self, index)

    def __iter__(self) -> Iterator[str]:
        self.used_as_list = True
        return str.__iter__(self)


def _watch(value: Any) -> Any:
    if isinstance(value, dict):
        return _Watched(value)
    if isinstance(value, list) and not isinstance(value, _WatchedList):
        return [_watch(item) for item in value]
    return value


def _mark_all(value: Any) -> None:
    if isinstance(value, _Watched):
        value.read.update(value.keys())
        for item in dict.values(value):
            _mark_all(item)
    elif isinstance(value, list):
        for item in list.__iter__(value):
            _mark_all(item)


def _read(value: Any, *path: str | int) -> bool:
    """Whether the template read the key at the end of ``path``."""
    for step in path[:-1]:
        value = dict.__getitem__(value, step) if isinstance(step, str) else value[step]
    return isinstance(value, _Watched) and path[-1] in value.read


_USER = {"role": "user", "content": "User message"}
_TOOL = {
    "name": "tool",
    "type": "function",
    "function": {
        "name": "tool1",
        "description": "Tool description",
        "parameters": {
            "type": "object",
            "properties": {"arg": {"type": "string", "description": "Arg description"}},
            "required": ["arg"],
        },
    },
}


def _tool_conversation(arguments: Any, calls: int) -> list[dict[str, Any]]:
    tool_calls = [
        {"id": f"call0000{n}", "type": "function",
         "function": {"name": "tool1", "arguments": arguments}}
        for n in range(1, calls + 1)
    ]  # fmt: skip
    return [
        _USER,
        {"role": "assistant", "content": "", "tool_calls": tool_calls},
        {"role": "tool", "content": "Tool response", "tool_call_id": "call00001"},
        {"role": "assistant", "content": "The tool response was 'tool response'"},
        _USER,
    ]


class _Prober:
    """Renders probe conversations, noting what the template dumped or tested on the way."""

    def __init__(self, source: str) -> None:
        self.render = jinja_engine.compile_template(source, _probe_time, self._observe)
        # llama.cpp binds both names to one value and asks whether it was read; a template
        # that names either as a free variable reads it.
        names = jinja2.meta.find_undeclared_variables(_parser.parse(source))
        self.uses_effort = bool({"reasoning_effort", "reasoning_strength"} & names)

    @staticmethod
    def _observe(operation: str, value: Any) -> None:
        if operation in ("tojson", "string"):
            _mark_all(value)
        elif isinstance(value, _WatchedText | _WatchedList):
            if operation == "is_string":
                value.tested_string = True
            else:
                value.used_as_list = True

    def run(
        self,
        messages: list[dict[str, Any]],
        extra: dict[str, Any] | None = None,
        tools: bool = False,
    ) -> tuple[bool, Any, Any, str]:
        context: dict[str, Any] = {
            "messages": _watch(messages),
            "tools": _watch([_TOOL] if tools else []),
            "bos_token": "",
            "eos_token": "",
            "add_generation_prompt": True,
            **(extra or {}),
        }
        try:
            output = self.render(context)
        except Exception:  # a probe the template rejects tells what it cannot do
            return False, context["messages"], context["tools"], ""
        return True, context["messages"], context["tools"], output


_parser = jinja2.Environment(extensions=jinja_engine.EXTENSIONS)


def _probe_time() -> datetime.datetime:
    return datetime.datetime(2024, 1, 1)


# What llama.cpp's preserve_reasoning=true sets (``caps_apply_preserve_reasoning``).
PRESERVE_ON = {
    "preserve_thinking": True,
    "clear_thinking": False,
    "truncate_history_thinking": False,
    "drop_thinking": False,
}


def probe_caps(source: str) -> TemplateCaps:
    """The template's capabilities, as llama.cpp's ``caps_get`` finds them."""
    prober = _Prober(source)
    found: dict[str, bool] = {}

    marker = _WatchedText("STRING_MARKER")
    ok, _, _, output = prober.run([{"role": "user", "content": marker}])
    if marker.used_as_list:
        found["supports_typed_content"] = True
    if not ok or (marker.used_as_list and "STRING_MARKER" not in output):
        found["supports_string_content"] = False
    if marker.tested_string:
        parts = _WatchedList()
        ok, _, _, _ = prober.run([{"role": "user", "content": parts}])
        if ok and parts.used_as_list:
            found["supports_typed_content"] = True

    _, messages, _, _ = prober.run([{"role": "system", "content": "System message"}, _USER])
    if not _read(messages, 0, "content"):
        found["supports_system_role"] = False

    ok, messages, tools, _ = prober.run(_tool_conversation({"arg": "value"}, 1), tools=True)
    if ok:
        if not _read(tools, 0, "function", "name"):
            found["supports_tools"] = False
        if not _read(messages, 1, "tool_calls"):
            found["supports_tool_calls"] = False
        elif _read(messages, 1, "tool_calls", 0, "function", "arguments", "arg"):
            found["supports_object_arguments"] = True
    if not found.get("supports_object_arguments"):
        ok, messages, tools, _ = prober.run(_tool_conversation('{"arg": "value"}', 1), tools=True)
        if not ok:
            found["supports_tool_calls"] = found["supports_tools"] = False
        else:
            if not _read(tools, 0, "function", "name"):
                found["supports_tools"] = False
            if not _read(messages, 1, "tool_calls"):
                found["supports_tool_calls"] = False

    arguments: Any = (
        {"arg": "value"} if found.get("supports_object_arguments") else '{"arg": "value"}'
    )
    ok, messages, _, _ = prober.run(_tool_conversation(arguments, 2), tools=True)
    if not ok or not _read(messages, 1, "tool_calls", 1, "function"):
        found["supports_parallel_tool_calls"] = False

    placeholder = "<REASONING_CONTENT_PLACEHOLDER>"
    reasoning = [
        _USER,
        {"role": "assistant", "content": "Assistant message", "reasoning_content": placeholder},
        _USER,
        {"role": "assistant", "content": "Assistant message",
         "reasoning_content": "Reasoning content"},
        _USER,
    ]  # fmt: skip
    _, _, _, output = prober.run(reasoning, {"enable_thinking": True, **PRESERVE_ON})
    found["supports_preserve_reasoning"] = placeholder in output
    found["supports_reasoning_effort"] = prober.uses_effort
    return TemplateCaps(**found)
