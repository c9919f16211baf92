"""How a request's answer is read: the template picks native or generic tools, the choice picks
an eager or lazy grammar, the reasoning format picks where thinking goes."""

from __future__ import annotations

from typing import Any

import pytest

from corral.http.errors import ApiError
from tests.support.files.tiny_gguf import CHATML_TEMPLATE
from worker.chat.output import plan_output

HERMES = "{{ '<tool_call>' }}{# <think> #}"
GPT_OSS = "<|start|>assistant<|channel|>final<|message|>"
TOOLS = [
    {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "b"}},
]
ASK = [{"role": "user", "content": "hi"}]


def _plan(source: str, choice: Any = "auto", fmt: str = "auto", parallel: bool = True) -> Any:
    return plan_output(source, ASK, TOOLS, choice, parallel, fmt)


def test_a_template_without_a_syntax_gets_the_generic_json_mode() -> None:
    plan = _plan(CHATML_TEMPLATE)
    assert plan.format.name == "Generic"
    assert plan.triggers == ()
    assert plan.messages[0]["role"] == "system"  # the tools described for the model
    assert plan.whole.parse('{"tool_call": {"name": "a", "arguments": {}}}', False).tool_calls


def test_auto_is_lazy_required_and_named_are_not() -> None:
    auto = _plan(HERMES)
    assert (auto.format.name, auto.triggers, auto.messages) == (
        "Hermes 2 Pro",
        ("<tool_call>",),
        ASK,
    )
    assert _plan(HERMES, "required").triggers == ()
    named = _plan(HERMES, {"type": "function", "function": {"name": "b"}})
    assert named.triggers == ()
    assert named.grammar is not None
    assert '\\"b\\"' in named.grammar
    assert '\\"a\\"' not in named.grammar


def test_none_reads_no_tool_calls() -> None:
    plan = _plan(HERMES, "none")
    assert plan.grammar is None
    text = '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
    assert plan.whole.whole(text).content == text


@pytest.mark.parametrize(
    ("choice", "message"),
    [({"type": "function", "function": {"name": "c"}}, "unknown tool 'c'"),
     ("sometimes", "tool_choice must be")],
)  # fmt: skip
def test_bad_choices_are_400(choice: Any, message: str) -> None:
    with pytest.raises(ApiError, match=message):
        _plan(HERMES, choice)


def test_reasoning_formats_pick_where_thinking_goes() -> None:
    text = "<think>Hmm.</think>Yes."
    assert _plan(HERMES, fmt="auto").whole.whole(text).reasoning == "Hmm."
    assert _plan(HERMES, fmt="none").whole.whole(text).content == text
    legacy = _plan(HERMES, fmt="deepseek-legacy")
    assert (legacy.whole.whole(text).reasoning, legacy.whole.whole(text).content) == ("Hmm.", text)
    assert legacy.stream.parse(text, partial=True).content == text  # a stream keeps the tags
    with pytest.raises(ApiError, match="reasoning_format must be one of"):
        _plan(HERMES, fmt="verbose")


def test_a_prompt_that_opens_the_thinking_starts_the_answer_inside_it() -> None:
    plan = _plan(HERMES).after_prompt("<|im_start|>assistant\n<think>\n")
    assert plan.whole.whole("Hmm.</think>Yes.").reasoning == "Hmm."
    unopened = _plan(HERMES).after_prompt("<|im_start|>assistant\n")
    assert unopened.whole.whole("Hmm.</think>Yes.").reasoning == ""


def test_gpt_oss_channels_are_read_even_without_tools() -> None:
    plan = plan_output(GPT_OSS, ASK, None, None, True, "auto")
    text = (
        "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant<|channel|>final<|message|>Yes."
    )
    message = plan.whole.whole(text)
    assert (message.reasoning, message.content) == ("Hmm.", "Yes.")


def test_llama_3_1_reads_the_requests_builtin_tools_after_the_python_tag() -> None:
    source = "<|start_header_id|>ipython<|end_header_id|><|python_tag|>"
    search = {"type": "function", "function": {"name": "brave_search", "parameters": {}}}
    plan = plan_output(source, ASK, [*TOOLS, search], "auto", True, "auto")
    assert plan.triggers == (r"^\s*(\{)", r"<\|python_tag\|>")
    call = plan.whole.whole('<|python_tag|>brave_search.call(query="x")').tool_calls[0]
    assert (call.name, call.arguments) == ("brave_search", '{"query": "x"}')
    without = _plan(source)  # no built-in tool among them: the tag is text
    assert without.triggers == (r"^\s*(\{)",)
    assert without.whole.whole("<|python_tag|>a.call()").tool_calls == []


@pytest.mark.parametrize(
    ("source", "trigger"),
    [(GPT_OSS, r"^\s+to$"),
     ("{{ '<|tool_call>call:' }}", r"<\|tool_call>"),
     ("<|tool_list_start|>{{ tools }}<|tool_list_end|>", r"<\|tool_call_start\|>"),
     (">>>all >>>${recipient}", r"^(?!all\n)([\w.-]+\n)")],
)  # fmt: skip
def test_framed_families_get_their_lazy_grammar(source: str, trigger: str) -> None:
    auto = _plan(source)
    assert auto.grammar is not None
    assert auto.triggers[0] == trigger
    required = _plan(source, "required")
    assert (required.grammar is not None, required.triggers) == (True, ())
    assert _plan(source, "none").grammar is None
