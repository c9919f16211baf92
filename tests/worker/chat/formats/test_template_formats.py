"""Every template llama.cpp ships gets the tool-call format llama-server picks for it.

``llama_server_formats.json`` is recorded from a real llama-server
(``scripts/record_chat_formats.py``): per template, the dedicated parser llama.cpp chose, or
what its differential autoparser found (tool-call markers, argument layout). The tables below
turn that record into the Corral format of the same syntax; the test asserts Corral's
detection from the template's text agrees, except for the differences listed (and checks they
still differ, so the list stays true).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worker.chat.formats import detect_format

GOLDENS = Path(__file__).parents[2] / "template_goldens"
RECORDED: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "llama_server_formats.json").read_text()
)

# llama.cpp's dedicated parsers (common_chat_try_specialized_template) → Corral's format.
SPECIALIZED = {
    "GPT-OSS": "gpt-oss",
    "Functionary v3.2": "Functionary v3.2",
    "Kimi K2 Thinking": "Kimi K2",
    "Cohere2 MoE": "Cohere2 MoE",
    "LFM2": "LFM2",
    "LFM2.5": "LFM2.5",
    "DeepSeek V3.2/V4": "DeepSeek V3.2 or V4",
    "Qwen3-Coder": "Qwen3-Coder",
    "Ministral/Magistral Large 3": "Mistral",
    "Ling 3.0 (Bailing V3)": "GLM 4.5",  # the same <arg_key>/<arg_value> calls
    "GigaChatV3": "GigaChat 3",
    "Kimi K3": "Kimi K3",
    "MiniMax-M3": "MiniMax M3",
    "Muse Glimmer": "Muse Glimmer",
    "MiniCPM5": "MiniCPM5",
}
# What the autoparser found (a marker in its findings) → Corral's format; the first row wins.
AUTOPARSED: tuple[tuple[str, str, str], ...] = (
    ("arg_name_prefix", "<arg_key>", "GLM 4.5"),
    ("per_call_start", "<seed:tool_call>", "Seed-OSS"),
    ("tool_section_start", "<minimax:tool_call>", "MiniMax M2"),
    ("per_call_start", "<TOOLCALL>", "Nemotron Nano v2"),
    ("per_call_start", "<tool_call>", "Hermes 2 Pro"),
    ("per_call_start", "[TOOL_CALLS]", "Mistral"),
    ("tool_section_start", "[TOOL_CALLS]", "Mistral Nemo"),
    ("tool_section_start", "functools", "Firefunction v2"),
    ("tool_section_start", "<|START_ACTION|>", "Command R7B"),
    ("func_name_prefix", "function<\uff5ctool\u2581sep\uff5c>", "DeepSeek R1"),
    ("per_call_start", "<\uff5ctool\u2581call\u2581begin\uff5c>function", "DeepSeek R1"),
    ("per_call_start", "<\uff5ctool\u2581call\u2581begin\uff5c>", "DeepSeek V3.1"),
    ("per_call_start", "<function=", "Functionary v3.1"),
    ("per_call_start", "<|tool_call:begin|>", "Solar Open"),
    ("tool_section_start", "Action:\n```json", "Command R+"),
    ("tool_section_start", "<|function_call|>", "GigaChat 3.1"),
    ("tool_section_start", "<tool_calls:opensource>", "Hy3"),
    ("tool_section_start", "<|tools_prefix|>", "Apertus"),
    ("args_field", "parameters", "Llama 3.x"),  # no markers: the whole answer is the call
)
# Where Corral deliberately or knowingly differs (docs/tool-calls.md, differences).
DIFFERENCES = {
    # llama.cpp's dedicated parsers and autoparsed syntaxes Corral does not read: generic tools
    # llama.cpp's autoparser finds no tool calls in these; Corral reads the template's syntax
    "ibm-granite-granite-3.3-2B-Instruct": "Generic",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": "Generic",
}


def llama_cpp_format(record: dict[str, Any]) -> str:
    """The Corral format of the syntax llama-server reads for one recorded template."""
    if "specialized" in record:
        name: str = record["specialized"]
        return SPECIALIZED.get(name, name)
    if "neither" in record:  # Gemma 4's is the one dedicated parser llama.cpp does not log
        return "Gemma 4"
    found = record["autoparser"]
    if found["tool_mode"] != "NONE" and found["tool_section_start"] == "<tool_calls>":
        return "Apriel"
    if found["tool_mode"] != "NONE" and found["tool_section_start"] == "<tool_calls>\n":
        return "MiniMax M1"  # one call per line
    if found["tool_mode"] == "NONE":  # no tool calls found: content only
        return "Generic"
    for key, marker, name in AUTOPARSED:
        if marker in found.get(key, ""):
            return name
    return f"a syntax Corral does not read: {found['tool_section_start']}{found['per_call_start']}"


def _corral_format(template: str) -> str:
    source = json.loads((GOLDENS / f"{template}.json").read_text())["source"]
    name = detect_format(source).name
    return "DeepSeek V3.2 or V4" if name in ("DeepSeek V3.2", "DeepSeek V4") else name


def test_every_template_was_recorded() -> None:
    goldens = {p.stem for p in GOLDENS.glob("*.json")} - {"manifest"}
    assert set(RECORDED) == goldens
    assert len(RECORDED) == 70


@pytest.mark.parametrize("template", sorted(set(RECORDED) - set(DIFFERENCES)))
def test_corral_reads_the_format_llama_server_reads(template: str) -> None:
    assert _corral_format(template) == llama_cpp_format(RECORDED[template])


@pytest.mark.parametrize("template", sorted(DIFFERENCES))
def test_the_listed_differences_still_differ(template: str) -> None:
    assert llama_cpp_format(RECORDED[template]) != _corral_format(template)
    if DIFFERENCES[template] != "Generic":
        assert _corral_format(template) == "Generic"  # a syntax Corral does not read


AUTOPARSED_TEMPLATES = sorted(t for t, r in RECORDED.items() if "autoparser" in r)


@pytest.mark.parametrize("template", AUTOPARSED_TEMPLATES)
def test_thinking_ends_where_llama_servers_does(template: str) -> None:
    """llama.cpp's autoparser also finds the reasoning tags; Corral's end tag is the same.
    (Apriel 1.6's start differs in name only: llama.cpp counts from ``<|begin_assistant|>``,
    Corral from the reasoning line after it; the prompt writes both.)"""
    found = RECORDED[template]["autoparser"]
    source = json.loads((GOLDENS / f"{template}.json").read_text())["source"]
    thinking = detect_format(source).thinking
    if found["reasoning_mode"] == "NONE":
        assert thinking is None
        return
    assert thinking is not None
    assert thinking.end == found["reasoning_end"].strip()
    if template != "Apriel-1.6-15b-Thinker-fixed":
        assert thinking.start == found["reasoning_start"].strip()
