"""A template's chat format, told from markers in its source as llama.cpp's are."""

from __future__ import annotations

import pytest

from worker.chat.formats import ThinkingTags, detect_format

# Fragments of the real templates in llama.cpp's models/templates, enough to carry the markers.
SOURCES = [
    ("Hermes 2 Pro", "{{- '<tool_call>\\n' + tool_call | tojson + '\\n</tool_call>' }}"),
    ("Qwen3-Coder", "<tool_call>\n<function={{ name }}>\n<parameter={{ key }}>\n"),
    ("GLM 4.5", "<tool_call>{{ tc.name }}<arg_key>{{ k }}</arg_key>"),
    ("MiniMax M2", '<minimax:tool_call>\n<invoke name="{{ name }}">'),
    ("Kimi K2", "<|tool_calls_section_begin|><|tool_call_begin|>"),
    ("DeepSeek V3.2", "{%- set dsml_token = 'x' -%} '<' + dsml_token + 'function_calls>\\n'"),
    ("DeepSeek V4", "{%- set dsml_token = 'x' -%} '<' + dsml_token + 'tool_calls>\\n'"),
    ("DeepSeek R1", "<\uff5ctool\u2581calls\u2581begin\uff5c>'+ '```json' + '\\n'"),
    ("DeepSeek V3.1", "<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581sep\uff5c>"),
    ("Mistral", "[TOOL_CALLS]' + name + '[ARGS]'"),
    ("Mistral Nemo", '[TOOL_CALLS][" }}'),
    ("Functionary v3.1", "<function={{ name }}>{{ args }}</function> <|python_tag|>"),
    ("Firefunction v2", " functools[{{ calls }}]"),
    ("Command R7B", "<|START_THINKING|><|END_THINKING|><|START_ACTION|>"),
    ("Cohere2 MoE", "<|START_THINKING|><|START_ACTION|><|START_TEXT|>{{ msg }}<|END_TEXT|>"),
    ("Granite", "respond only with <|tool_call|> followed by a JSON list"),
    ("Llama 3.x", '<|start_header_id|>ipython<|end_header_id|> "parameters": '),
    ("Seed-OSS", "<seed:tool_call>\n<function=example_function_name>"),
    ("Solar Open", "<|tool_call:begin|>' + id + '<|tool_call:name|>"),
    ("Apriel", "within <tool_calls></tool_calls> XML tags. <tool_calls>[ <tool_call>"),
    ("Nemotron Nano v2", "<TOOLCALL>[{{ calls }}]</TOOLCALL>"),
    ("Generic", "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"),
]


@pytest.mark.parametrize(("name", "source"), SOURCES)
def test_the_format_is_told_by_its_markers(name: str, source: str) -> None:
    assert detect_format(source).name == name


def test_generic_templates_have_no_native_syntax() -> None:
    assert detect_format("{{ messages }}").tools is None


def test_thinking_tags_come_from_the_template() -> None:
    assert detect_format("<think>{{ x }}</think>").thinking == ThinkingTags()
    assert detect_format("[THINK]{{ x }}[/THINK]").thinking == ThinkingTags("[THINK]", "[/THINK]")
    assert detect_format("{{ x }}").thinking is None
    r7b = detect_format("<|START_THINKING|><|START_ACTION|>")
    assert r7b.thinking == ThinkingTags("<|START_THINKING|>", "<|END_THINKING|>")
