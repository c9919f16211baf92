"""A tiny model that calls tools the Hermes way, for tests of tool calls through every layer.

Its chat template is Qwen 2.5's shape: the tools in a system turn, calls written as
``<tool_call>`` JSON, results given back in ``<tool_response>``. ``<tool_call>`` and the other
markers are user-defined tokens of their own, as in real models, so a test can make the
random-weight model open a call with ``logit_bias`` (the worker's lazy grammar then writes a
valid one).
"""

from __future__ import annotations

__all__ = ["HERMES_TEMPLATE", "USER_TOKENS"]

HERMES_TEMPLATE = (
    # Qwen 2.5's way: the tools described in a system turn of their own.
    "{%- if tools -%}{{- '<|im_start|>system\\n# Tools\\n' -}}"
    "{%- for tool in tools -%}{{- tool | tojson + '\\n' -}}{%- endfor -%}"
    "{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message.role == 'assistant' and message.tool_calls -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- for call in message.tool_calls -%}"
    "{%- set args = call.function.arguments -%}"
    '{{- \'<tool_call>\\n{"name": "\' + call.function.name + \'", "arguments": \' -}}'
    "{{- (args if args is string else args | tojson) + '}\\n</tool_call>' -}}"
    "{%- endfor -%}{{- '<|im_end|>\\n' -}}"
    "{%- elif message.role == 'tool' -%}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response>"
    "<|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
USER_TOKENS = ("<tool_call>", "</tool_call>", "<think>", "</think>")
