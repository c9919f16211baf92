"""Chat templates and reasoning."""

from __future__ import annotations

from corral.options.values import OptionSpec

__all__ = ["ROWS"]

ROWS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "chat-template",
        "str",
        spellings=("LLAMA_ARG_CHAT_TEMPLATE",),
        help="one of llama.cpp's built-in template names (`chatml`, `llama3`, `gemma`, …) or "
        "Jinja text, instead of the GGUF's (docs/templates.md)",
    ),
    OptionSpec(
        "chat-template-file",
        "str",
        spellings=("LLAMA_ARG_CHAT_TEMPLATE_FILE",),
        help="Jinja chat template read from this file, instead of the GGUF's",
    ),
    OptionSpec(
        "chat-template-kwargs",
        "str",
        spellings=("LLAMA_ARG_CHAT_TEMPLATE_KWARGS",),
        help='JSON object of extra template variables, e.g. `{"enable_thinking": false}`; a '
        "request's `chat_template_kwargs` win over it",
    ),
    OptionSpec(
        "jinja",
        "bool",
        spellings=("LLAMA_ARG_JINJA",),
        negatives=("no-jinja", "LLAMA_ARG_NO_JINJA"),
        default="true",
        dest="jinja",
        help="render chat templates with Jinja as llama-server does (default on); `no-jinja` = "
        "llama.cpp's built-in templates only, no tools",
    ),
    OptionSpec(
        "reasoning",
        "switch",
        spellings=("rea", "LLAMA_ARG_REASONING"),
        default="auto",
        dest="reasoning",
        help="thinking on or off for templates that switch it (`enable_thinking`); `auto` = the "
        "template's default; `--chat-template-kwargs` wins",
    ),
    OptionSpec(
        "reasoning-format",
        "choice",
        spellings=("LLAMA_ARG_THINK",),
        literals=("none", "deepseek", "deepseek-legacy", "auto"),
        default="auto",
        dest="reasoning_format",
        help="where thinking goes: `none` (left in the content), `deepseek` or `auto` "
        "(`reasoning_content`), `deepseek-legacy` (both); see docs/tool-calls.md",
    ),
    # Corral's own. The default is llama-server's: a template with no tool-call syntax is
    # rendered as is and answered as text (docs/tool-calls.md, "Templates without tool calls").
    OptionSpec(
        "tool-mode",
        "choice",
        literals=("template", "generic"),
        default="template",
        dest="tool_mode",
        help="Corral: tools for a template with no tool-call syntax of its own: `template` (as "
        "llama-server: rendered as is, answered as text) or `generic` (Corral's JSON tool "
        "mode: tool instructions, a grammar, calls read back); see docs/tool-calls.md",
    ),
    # Upstream rejects anything below -1; -1 means no budget.
    OptionSpec(
        "reasoning-budget",
        "int",
        spellings=("LLAMA_ARG_THINK_BUDGET",),
        bound="non_negative",
        literals=("-1",),
        default="-1",
        dest="reasoning_budget",
        help="tokens of thinking before the end tag is forced: -1 unlimited, 0 none",
    ),
    OptionSpec(
        "reasoning-budget-message",
        "str",
        spellings=("LLAMA_ARG_THINK_BUDGET_MESSAGE",),
        default="",
        dest="reasoning_budget_message",
        help="text forced before the end tag when the reasoning budget is spent (a request's "
        "`reasoning_budget_message` wins)",
    ),
)
