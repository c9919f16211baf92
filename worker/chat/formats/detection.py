"""Which chat format a model speaks, told from its chat template's source (docs/tool-calls.md).

llama.cpp recognises a few families by markers in the template source and works the rest out
by rendering the template with sample tool calls (its "differential autoparser"). Corral keeps
to the markers, for every family in llama.cpp's ``models/templates``: the first row of
:data:`FORMATS` whose markers are all in the source wins. A template with no tool-call syntax
Corral knows gets the generic JSON tool mode (:mod:`worker.chat.json_tools`).
"""

from __future__ import annotations

from dataclasses import dataclass

from worker.chat.formats import families
from worker.chat.formats.own_shape.gemma4 import GEMMA4
from worker.chat.formats.own_shape.harmony import GPT_OSS
from worker.chat.formats.own_shape.muse import MUSE_GLIMMER
from worker.chat.formats.own_shape.python_tag import PythonTagSyntax
from worker.chat.formats.own_shape.pythonic import LFM2
from worker.chat.formats.own_shape.recipients import FUNCTIONARY_V3_2
from worker.chat.formats.reasoning import ThinkingTags
from worker.chat.formats.syntax import NativeSyntax

__all__ = ["FORMATS", "ChatFormat", "detect_format"]

_COHERE_THINKING = ThinkingTags("<|START_THINKING|>", "<|END_THINKING|>")
_THINKING = (ThinkingTags(), ThinkingTags("[THINK]", "[/THINK]"))


@dataclass(frozen=True, slots=True)
class ChatFormat:
    name: str
    tools: NativeSyntax | None  # None: the generic JSON tool mode
    thinking: ThinkingTags | None  # None: the template has no thinking tags
    content_markers: tuple[str, ...] = ()  # wrap the answer's text; not part of it


@dataclass(frozen=True, slots=True)
class _Row:
    name: str
    markers: tuple[str, ...]
    tools: NativeSyntax | None
    thinking: ThinkingTags | None = None  # overrides the <think> tags found in the source
    absent: tuple[str, ...] = ()  # markers that must not be there
    content_markers: tuple[str, ...] = ()


FORMATS: tuple[_Row, ...] = (
    _Row("gpt-oss", ("<|channel|>",), GPT_OSS),
    _Row("Muse Glimmer", ("<atem:function_calls>", "<|eom|>"), MUSE_GLIMMER),
    _Row(
        "Gemma 4",
        ("'<|tool_call>call:'",),
        GEMMA4,
        ThinkingTags("<|channel>thought", "<channel|>"),
    ),
    _Row("LFM2", ("<|tool_list_start|>", "<|tool_list_end|>"), LFM2),
    _Row("LFM2.5", ("List of tools: [",), LFM2, absent=("<|tool_list_start|>",)),
    _Row("Functionary v3.2", (">>>all", ">>>${recipient}"), FUNCTIONARY_V3_2),
    _Row("Kimi K2", ("<|tool_calls_section_begin|>",), families.KIMI_K2),
    _Row(
        "Kimi K3",
        ("<|open|>", "<|close|>", "<|end_of_msg|>"),
        families.KIMI_K3,
        ThinkingTags("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
        # the answer's text is a "response" block, the message closed after it
        content_markers=(
            "<|open|>response<|sep|>",
            "<|close|>response<|sep|>",
            "<|close|>message<|sep|>",
            "<|end_of_msg|>",
        ),
    ),
    _Row(
        "MiniMax M3",
        ("]<]minimax[>[", "<tool_call>", "<invoke name="),
        families.MINIMAX_M3,
        ThinkingTags("<mm:think>", "</mm:think>"),
    ),
    _Row("MiniMax M2", ("<minimax:tool_call>",), families.MINIMAX_M2),
    _Row("DeepSeek V3.2", ("dsml_token", "function_calls"), families.DEEPSEEK_V3_2),
    _Row("DeepSeek V4", ("dsml_token", "tool_calls>"), families.DEEPSEEK_V4),
    _Row("DeepSeek R1", ("tool▁calls▁begin", "```json"), families.DEEPSEEK_R1),
    _Row("DeepSeek V3.1", ("tool▁calls▁begin",), families.DEEPSEEK_V3_1),
    _Row(
        "Seed-OSS",
        ("<seed:tool_call>",),
        families.SEED_OSS,
        ThinkingTags("<seed:think>", "</seed:think>"),
    ),
    _Row("Solar Open", ("<|tool_call:begin|>",), families.SOLAR_OPEN),
    _Row(
        "Apriel",
        ("<tool_calls>[", "Here are my reasoning steps:"),
        families.APRIEL,
        # Apriel 1.6: the prompt opens the reasoning with this line; the marker ends it
        ThinkingTags("Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]"),
    ),
    _Row("Apriel", ("<tool_calls>[",), families.APRIEL),
    _Row("Apertus", ("<|tools_prefix|>", "<|tools_suffix|>"), families.APERTUS),
    _Row("MiniMax M1", ("<tool_calls>", "<beginning_of_sentence>"), families.MINIMAX_M1),
    _Row("Nemotron Nano v2", ("<TOOLCALL>",), families.NEMOTRON_V2),
    _Row(
        "MiniCPM5",
        ("Tool usage guidelines:", '<function name="', '<param name="'),
        families.MINICPM5,
    ),
    _Row("Qwen3-Coder", ("<tool_call>", "<function=", "<parameter="), families.QWEN3_CODER),
    _Row("GLM 4.5", ("<tool_call>", "<arg_key>"), families.GLM_4_5),
    _Row("Hermes 2 Pro", ("<tool_call>",), families.HERMES, absent=("<invoke name",)),
    _Row("Functionary v3.1", ("<function=", "<|python_tag|>"), families.FUNCTIONARY_V3_1),
    _Row("Mistral", ("[TOOL_CALLS]", "[ARGS]"), families.MISTRAL),
    _Row("Mistral Nemo", ("[TOOL_CALLS]",), families.MISTRAL_NEMO),
    _Row("Firefunction v2", ("functools[",), families.FIREFUNCTION_V2),
    _Row(
        "Cohere2 MoE",
        ("<|START_TEXT|>", "<|START_ACTION|>"),
        families.COMMAND_R7B,
        _COHERE_THINKING,
        content_markers=("<|START_TEXT|>", "<|END_TEXT|>"),
    ),
    _Row(
        "Command R7B",
        ("<|START_ACTION|>", "<|START_THINKING|>"),
        families.COMMAND_R7B,
        _COHERE_THINKING,
        content_markers=("<|START_RESPONSE|>", "<|END_RESPONSE|>"),
    ),
    _Row("Granite", ("<|tool_call|>",), families.GRANITE),
    _Row("Command R+", ("<|CHATBOT_TOKEN|>", "Action:"), families.COMMAND_R_PLUS),
    _Row("GigaChat 3.1", ("<|function_call|>", "<|role_sep|>"), families.GIGACHAT_3_1),
    _Row("GigaChat 3", ("<|role_sep|>", "<|message_sep|>"), families.GIGACHAT_3),
    _Row(
        "Hy3",
        ("<tool_calls{}>", ":opensource"),  # the template builds its markers
        families.HY3,
        ThinkingTags("<think:opensource>", "</think:opensource>"),
    ),
    # Llama 3.1 / 3.3 also call Meta's built-in tools after <|python_tag|>
    _Row(
        "Llama 3.x",
        ("<|start_header_id|>", "<|python_tag|>"),
        PythonTagSyntax(families.LLAMA_3_JSON),
    ),
    _Row("Llama 3.x", ("<|start_header_id|>", "ipython"), families.LLAMA_3_JSON),
    _Row("Llama 3.x", ("<|start_header_id|>", '"parameters"'), families.LLAMA_3_JSON),
)


def detect_format(source: str) -> ChatFormat:
    """The format of the template ``source``; generic JSON tools when none matches."""
    thinking = next((tags for tags in _THINKING if tags.start in source), None)
    for row in FORMATS:
        if all(m in source for m in row.markers) and not any(m in source for m in row.absent):
            return ChatFormat(row.name, row.tools, row.thinking or thinking, row.content_markers)
    return ChatFormat("Generic", None, thinking)
