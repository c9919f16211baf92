"""The tool-call syntax of each model family llama.cpp parses (docs/tool-calls.md).

Only data: which literal opens a family's tool calls and how each call is written.
"""

from __future__ import annotations

import re

from worker.chat.formats.json_calls import JsonToolSyntax
from worker.chat.formats.xml_calls import XmlToolSyntax

__all__ = [
    "APERTUS",
    "APRIEL",
    "COMMAND_R7B",
    "COMMAND_R_PLUS",
    "DEEPSEEK_R1",
    "DEEPSEEK_V3_1",
    "DEEPSEEK_V3_2",
    "DEEPSEEK_V4",
    "FIREFUNCTION_V2",
    "FUNCTIONARY_V3_1",
    "GIGACHAT_3",
    "GIGACHAT_3_1",
    "GLM_4_5",
    "GRANITE",
    "HERMES",
    "HY3",
    "KIMI_K2",
    "KIMI_K3",
    "LLAMA_3_JSON",
    "MINICPM5",
    "MINIMAX_M1",
    "MINIMAX_M2",
    "MINIMAX_M3",
    "MISTRAL",
    "MISTRAL_NEMO",
    "NEMOTRON_V2",
    "QWEN3_CODER",
    "SEED_OSS",
    "SOLAR_OPEN",
]

# Hermes 2 Pro / 3, Qwen 2.5 / 3, QwQ, Granite 4, MiMo, Apriel, …:
# <tool_call>{"name": "f", "arguments": {…}}</tool_call>
HERMES = JsonToolSyntax(
    write_head="<tool_call>\n",
    write_tail="\n</tool_call>",
    trigger="<tool_call>",
    consume_trigger=False,
    call_head=r"<tool_call>\s*",
    call_tail="</tool_call>",
)
# Mistral Nemo: [TOOL_CALLS][{"name": "f", "arguments": {…}, "id": "abcdefghi"}]
MISTRAL_NEMO = JsonToolSyntax(trigger="[TOOL_CALLS]", id_key="id")
# Mistral Small 3.2, Devstral, Ministral 3: [TOOL_CALLS]f[CALL_ID]id[ARGS]{…}
MISTRAL = JsonToolSyntax(
    write_head="[TOOL_CALLS]{name}[ARGS]",
    trigger="[TOOL_CALLS]",
    consume_trigger=False,
    call_head=r"\[TOOL_CALLS\](?P<name>[^\[]+)(?:\[CALL_ID\][^\[]*)?\[ARGS\]",
)
# Llama 3.x custom tools: the whole answer is {"name": "f", "parameters": {…}}
LLAMA_3_JSON = JsonToolSyntax(
    trigger="{",
    consume_trigger=False,
    call_head=r"(?=\{)",
    at_start=True,
    args_keys=("parameters", "arguments"),
)
# Functionary v3.1 (Llama 3.1): <function=f>{…}</function>
FUNCTIONARY_V3_1 = JsonToolSyntax(
    write_head="<function={name}>",
    write_tail="</function>",
    trigger="<function=",
    consume_trigger=False,
    call_head=r"<function=(?P<name>[^>]+)>",
    call_tail="</function>",
)
# Apertus: <|tools_prefix|>[{"f": {…}}, …]<|tools_suffix|>
APERTUS = JsonToolSyntax(
    trigger="<|tools_prefix|>", section_end="<|tools_suffix|>", name_is_key=True
)
# Apriel 1.5 / 1.6: <tool_calls>[{"name": "f", "arguments": {…}}]</tool_calls>
APRIEL = JsonToolSyntax(trigger="<tool_calls>", section_end="</tool_calls>")
# MiniMax M1: <tool_calls>\n{"name": "f", "arguments": {…}}\n{…}\n</tool_calls>, a call a line
MINIMAX_M1 = JsonToolSyntax(
    trigger="<tool_calls>", call_head=r"(?=\{)", section_end="</tool_calls>"
)
# Nemotron Nano v2: <TOOLCALL>[{"name": "f", "arguments": {…}}]</TOOLCALL>
NEMOTRON_V2 = JsonToolSyntax(trigger="<TOOLCALL>", section_end="</TOOLCALL>")
# Solar Open: <|tool_call:begin|>id<|tool_call:name|>f<|tool_call:args|>{…}<|tool_call:end|>
SOLAR_OPEN = JsonToolSyntax(
    write_head="<|tool_call:begin|>0<|tool_call:name|>{name}<|tool_call:args|>",
    write_tail="<|tool_call:end|>",
    trigger="<|tool_call:begin|>",
    consume_trigger=False,
    call_head=(
        r"<\|tool_call:begin\|>(?P<id>[^<]*)<\|tool_call:name\|>(?P<name>[^<]+)"
        r"<\|tool_call:args\|>"
    ),
    call_tail="<|tool_call:end|>",
)
# Firefunction v2: functools[{"name": "f", "arguments": {…}}]
FIREFUNCTION_V2 = JsonToolSyntax(trigger="functools")
# Granite 3.x: <|tool_call|>[{"name": "f", "arguments": {…}}]
GRANITE = JsonToolSyntax(trigger="<|tool_call|>")
# Command R7B: <|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {…}}]
COMMAND_R7B = JsonToolSyntax(
    trigger="<|START_ACTION|>",
    section_end="<|END_ACTION|>",
    name_keys=("tool_name",),
    args_keys=("parameters",),
    id_key="tool_call_id",
)
# Command R+: Action:\n```json\n[{"tool_name": "f", "parameters": {…}}]```
COMMAND_R_PLUS = JsonToolSyntax(
    trigger="Action:\n```json\n",
    section_end="```",
    name_keys=("tool_name",),
    args_keys=("parameters",),
)
# GigaChat 3.1: <|function_call|>{"name": "f", "arguments": {…}}
GIGACHAT_3_1 = JsonToolSyntax(
    write_head="<|function_call|>",
    trigger="<|function_call|>",
    consume_trigger=False,
    call_head=r"<\|function_call\|>",
)
_GIGACHAT_3_CALL = "<|message_sep|>\n\nfunction call<|role_sep|>\n"
# GigaChat 3: the answer's message closes, a "function call" message holds the JSON call
GIGACHAT_3 = JsonToolSyntax(
    write_head=_GIGACHAT_3_CALL,
    trigger=_GIGACHAT_3_CALL,
    consume_trigger=False,
    call_head=re.escape(_GIGACHAT_3_CALL),
)


def _deepseek(name: str) -> str:
    """A DeepSeek marker: fullwidth bars (U+FF5C) around the name, U+2581 for its spaces."""
    return "<\uff5c" + name.replace(" ", "\u2581") + "\uff5c>"


_DS_CALLS, _DS_CALLS_END = _deepseek("tool calls begin"), _deepseek("tool calls end")
_DS_CALL, _DS_SEP, _DS_END = (
    _deepseek("tool call begin"), _deepseek("tool sep"), _deepseek("tool call end")
)  # fmt: skip
# DeepSeek R1, written with ``<|…|>`` for its markers:
# <|tool calls begin|><|tool call begin|>function<|tool sep|>f\n```json\n{…}\n```<|tool call end|>
DEEPSEEK_R1 = JsonToolSyntax(
    write_head=f"{_DS_CALL}function{_DS_SEP}{{name}}\n```json\n",
    write_tail=f"\n```{_DS_END}",
    trigger=_DS_CALLS,
    call_head=rf"{_DS_CALL}(?:function)?{_DS_SEP}(?P<name>[^\n]+)\n```json\n",
    call_tail=f"```{_DS_END}",
    section_end=_DS_CALLS_END,
)
# DeepSeek V3.1: <|tool calls begin|><|tool call begin|>f<|tool sep|>{…}<|tool call end|>…
DEEPSEEK_V3_1 = JsonToolSyntax(
    write_head=f"{_DS_CALL}{{name}}{_DS_SEP}",
    write_tail=_DS_END,
    trigger=_DS_CALLS,
    call_head=rf"{_DS_CALL}(?P<name>[^<]+?){_DS_SEP}",
    call_tail=_DS_END,
    section_end=_DS_CALLS_END,
)
# Kimi K2: <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0
#          <|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>
KIMI_K2 = JsonToolSyntax(
    write_head="<|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>",
    write_tail="<|tool_call_end|>",
    trigger="<|tool_calls_section_begin|>",
    call_head=(
        r"<\|tool_call_begin\|>\s*(?:functions\.)?(?P<name>[^:<]+)(?::\d+)?\s*"
        r"<\|tool_call_argument_begin\|>"
    ),
    call_tail="<|tool_call_end|>",
    section_end="<|tool_calls_section_end|>",
)
# Kimi K3: <|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>
#          <|open|>argument key="k" type="string"<|sep|>v<|close|>argument<|sep|>
#          <|close|>call<|sep|><|close|>tools<|sep|>
KIMI_K3 = XmlToolSyntax(
    write_head='<|open|>call tool="{name}" index="1"<|sep|>',
    write_param='<|open|>argument key="{key}"<|sep|>',
    write_param_end="<|close|>argument<|sep|>",
    write_tail="<|close|>call<|sep|>",
    trigger="<|open|>tools<|sep|>",
    consume_trigger=True,
    call_open=r'<\|open\|>call tool="(?P<name>[^"]+)"[^<]*<\|sep\|>',
    call_close="<|close|>call<|sep|>",
    param_open=r'<\|open\|>argument key="(?P<key>[^"]+)"[^<]*<\|sep\|>',
    param_close="<|close|>argument<|sep|>",
    section_end="<|close|>tools<|sep|>",
    trim_values=False,
)
# Qwen3-Coder, Qwen 3.5, Nemotron 3 Nano, StepFun 3.5, Seed-OSS:
# <tool_call>\n<function=f>\n<parameter=k>\nv\n</parameter>\n</function>\n</tool_call>
QWEN3_CODER = XmlToolSyntax(
    write_head="<tool_call>\n<function={name}>\n",
    write_param="<parameter={key}>\n",
    write_param_end="\n</parameter>\n",
    write_tail="</function>\n</tool_call>",
    trigger="<tool_call>",
    call_open=r"<tool_call>\s*<function=(?P<name>[^>]+)>",
    call_close="</function>",
    param_open=r"<parameter=(?P<key>[^>]+)>",
    param_close="</parameter>",
    call_suffix="</tool_call>",
)
# GLM 4.5 / 4.6 / 4.7, Laguna, Ling, Spark:
# <tool_call>f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>
GLM_4_5 = XmlToolSyntax(
    write_head="<tool_call>{name}\n",
    write_param="<arg_key>{key}</arg_key>\n<arg_value>",
    write_param_end="</arg_value>\n",
    write_tail="</tool_call>",
    trigger="<tool_call>",
    call_open=r"<tool_call>(?P<name>[^\n<]+)(?=[\n<])",
    call_close="</tool_call>",
    param_open=r"<arg_key>(?P<key>[^<]*)</arg_key>\s*<arg_value>",
    param_close="</arg_value>",
    trim_values=False,
)
# Hy3: <tool_calls:opensource>\n<tool_call:opensource>f<tool_sep:opensource>\n
#      <arg_key:opensource>k</arg_key:opensource>\n<arg_value:opensource>v</arg_value:opensource>\n
#      </tool_call:opensource>\n</tool_calls:opensource>
HY3 = XmlToolSyntax(
    write_head="<tool_call:opensource>{name}<tool_sep:opensource>\n",
    write_param="<arg_key:opensource>{key}</arg_key:opensource>\n<arg_value:opensource>",
    write_param_end="</arg_value:opensource>\n",
    write_tail="</tool_call:opensource>\n",
    trigger="<tool_calls:opensource>",
    consume_trigger=True,
    call_open=r"<tool_call:opensource>(?P<name>[^<\n]+)<tool_sep:opensource>",
    call_close="</tool_call:opensource>",
    param_open=(
        r"<arg_key:opensource>(?P<key>[^<]*)</arg_key:opensource>\s*<arg_value:opensource>"
    ),
    param_close="</arg_value:opensource>",
    section_end="</tool_calls:opensource>",
    trim_values=False,
)
# MiniCPM5: <function name="f"><param name="k">v</param></function>
MINICPM5 = XmlToolSyntax(
    write_head='<function name="{name}">',
    write_param='<param name="{key}">',
    write_param_end="</param>",
    write_tail="</function>",
    trigger='<function name="',
    call_open=r'<function name="(?P<name>[^"]+)">',
    call_close="</function>",
    param_open=r'<param name="(?P<key>[^"]+)">',
    param_close="</param>",
    trim_values=False,
)
# Seed-OSS: <seed:tool_call><function=f><parameter=k>v</parameter></function></seed:tool_call>
SEED_OSS = XmlToolSyntax(
    write_head="<seed:tool_call>\n<function={name}>\n",
    write_param="<parameter={key}>",
    write_param_end="</parameter>\n",
    write_tail="</function>\n</seed:tool_call>",
    trigger="<seed:tool_call>",
    call_open=r"<seed:tool_call>\s*<function=(?P<name>[^>]+)>",
    call_close="</function>",
    param_open=r"<parameter=(?P<key>[^>]+)>",
    param_close="</parameter>",
    call_suffix="</seed:tool_call>",
)
_MM3 = "]<]minimax[>["  # MiniMax M3's namespace, before every tag
# MiniMax M3: <tool_call><invoke name="f"><k>v</k></invoke></tool_call>, each tag after _MM3
MINIMAX_M3 = XmlToolSyntax(
    write_head=f'\n{_MM3}<invoke name="{{name}}">',
    write_param=f"{_MM3}<{{key}}>",
    write_param_end=f"{_MM3}</{{key}}>",
    write_tail=f"{_MM3}</invoke>\n",
    trigger=f"{_MM3}<tool_call>",
    consume_trigger=True,
    call_open=re.escape(_MM3) + r'<invoke name="(?P<name>[^"]+)">',
    call_close=f"{_MM3}</invoke>",
    param_open=re.escape(_MM3) + r"<(?P<key>[^>/]+)>",
    param_close=f"{_MM3}</{{key}}>",
    section_end=f"{_MM3}</tool_call>",
    trim_values=False,
)
_DSML = "<\uff5cDSML\uff5c"  # DeepSeek's markup prefix, fullwidth bars


def _dsml(block: str) -> XmlToolSyntax:
    """DeepSeek V3.2 (``function_calls``) and V4 (``tool_calls``), written ``<|DSML|…>`` here:
    <|DSML|block><|DSML|invoke name="f"><|DSML|parameter name="k" string="true">v
    </|DSML|parameter></|DSML|invoke></|DSML|block>"""
    return XmlToolSyntax(
        write_head=f'{_DSML}invoke name="{{name}}">\n',
        write_param=f'{_DSML}parameter name="{{key}}" string="{{string}}">',
        write_param_end=f"</{_DSML[1:]}parameter>\n",
        write_tail=f"</{_DSML[1:]}invoke>\n",
        trigger=f"{_DSML}{block}>",
        consume_trigger=True,
        call_open=f'{_DSML}invoke name="(?P<name>[^"]+)">',
        call_close=f"</{_DSML[1:]}invoke>",
        param_open=f'{_DSML}parameter name="(?P<key>[^"]+)"(?: string="(?P<string>true|false)")?>',
        param_close=f"</{_DSML[1:]}parameter>",
        section_end=f"</{_DSML[1:]}{block}>",
        trim_values=False,
    )


DEEPSEEK_V3_2 = _dsml("function_calls")
DEEPSEEK_V4 = _dsml("tool_calls")
# MiniMax M2: <minimax:tool_call>\n<invoke name="f">\n<parameter name="k">v</parameter>\n
#             </invoke>\n</minimax:tool_call>
MINIMAX_M2 = XmlToolSyntax(
    write_head='<invoke name="{name}">\n',
    write_param='<parameter name="{key}">',
    write_param_end="</parameter>\n",
    write_tail="</invoke>\n",
    trigger="<minimax:tool_call>",
    call_open=r'<invoke name="(?P<name>[^"]+)">',
    consume_trigger=True,
    call_close="</invoke>",
    param_open=r'<parameter name="(?P<key>[^"]+)">',
    param_close="</parameter>",
    section_end="</minimax:tool_call>",
    trim_values=False,
)
