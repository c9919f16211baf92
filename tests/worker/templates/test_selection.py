"""Which template a model renders with, and the request-level switches (no model loaded)."""

from __future__ import annotations

from typing import Any

import pytest

from worker.templates import ChatTemplates, TemplateChoice, TemplateRenderError, VocabTokens

VOCAB = VocabTokens(bos_token="<s>", eos_token="</s>", add_bos=True, add_eos=False)
GGUF_TEMPLATE = "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
HELLO = [{"role": "user", "content": "hi"}]


def _render(templates: ChatTemplates, messages: list[dict[str, Any]], **extra: Any) -> str:
    return templates.render(templates.request(messages, **extra))


def test_the_gguf_template_is_used_unless_one_is_asked_for() -> None:
    templates = ChatTemplates(TemplateChoice(gguf_default=GGUF_TEMPLATE), VOCAB)
    assert (templates.name, templates.source) == ("gguf", GGUF_TEMPLATE)
    assert _render(templates, HELLO) == "[user]hi"


def test_a_model_without_a_template_gets_llama_cpp_s_chatml() -> None:
    templates = ChatTemplates(TemplateChoice(), VOCAB)
    assert templates.name == "chatml"
    assert _render(templates, HELLO) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_the_tool_use_template_renders_requests_with_tools() -> None:
    tool_use = "TOOLS{{ tools[0].function.name }}"
    choice = TemplateChoice(gguf_default=GGUF_TEMPLATE, gguf_tool_use=tool_use)
    templates = ChatTemplates(choice, VOCAB)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert _render(templates, HELLO) == "[user]hi"
    assert _render(templates, HELLO, tools=tools) == "TOOLSf"


@pytest.mark.parametrize(("wanted", "name"), [("llama3", "llama3"), ("llama-3", "llama3"),
                                              ("gemma2", "gemma")])  # fmt: skip
def test_built_in_names_render_through_llama_cpp(wanted: str, name: str) -> None:
    templates = ChatTemplates(TemplateChoice(override=wanted, gguf_default=GGUF_TEMPLATE), VOCAB)
    assert templates.name == name
    assert "hi" in _render(templates, HELLO)
    assert not templates.caps.supports_tools


def test_llama3_by_name_is_llama_cpp_s_own_layout() -> None:
    templates = ChatTemplates(TemplateChoice(override="llama3"), VOCAB)
    assert _render(templates, HELLO) == (
        "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def test_other_text_is_a_custom_jinja_template_whose_bos_is_left_to_the_tokenizer() -> None:
    templates = ChatTemplates(TemplateChoice(override="{{ bos_token }}{{ messages[0].content }}"),
                              VOCAB)  # fmt: skip
    assert templates.name == "custom"
    assert _render(templates, HELLO) == "hi"


def test_no_jinja_uses_the_built_in_template_the_gguf_text_is_recognised_as() -> None:
    chatml = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"
    templates = ChatTemplates(TemplateChoice(use_jinja=False, gguf_default=chatml), VOCAB)
    assert _render(templates, HELLO).startswith("<|im_start|>user\nhi<|im_end|>")
    with pytest.raises(TemplateRenderError, match="requires --jinja"):
        _render(templates, HELLO, tools=[{"type": "function", "function": {"name": "f"}}])


def test_no_jinja_refuses_requests_for_a_template_llama_cpp_does_not_know() -> None:
    templates = ChatTemplates(TemplateChoice(use_jinja=False, gguf_default="{{ x }}"), VOCAB)
    with pytest.raises(TemplateRenderError, match="try using --jinja"):
        _render(templates, HELLO)


THINKING = "{% if enable_thinking %}<think>{% else %}</think>{% endif %}"


def test_thinking_is_on_by_default_when_the_template_switches_thinking_markup() -> None:
    templates = ChatTemplates(TemplateChoice(gguf_default=THINKING), VOCAB)
    assert templates.supports_thinking
    assert _render(templates, HELLO) == "<think>"
    assert _render(templates, HELLO, kwargs={"enable_thinking": False}) == "</think>"


def test_server_kwargs_apply_and_the_request_s_win() -> None:
    source = "{{ greeting }} {{ enable_thinking }}"
    templates = ChatTemplates(TemplateChoice(gguf_default=source), VOCAB,
                              kwargs={"greeting": "hello", "enable_thinking": False})  # fmt: skip
    assert _render(templates, HELLO) == "hello False"
    assert _render(templates, HELLO, kwargs={"greeting": "hey"}) == "hey False"


def test_enable_thinking_as_a_string_is_refused_as_llama_server_does() -> None:
    templates = ChatTemplates(TemplateChoice(gguf_default=THINKING), VOCAB)
    with pytest.raises(TemplateRenderError, match="expected boolean"):
        templates.request(HELLO, kwargs={"enable_thinking": "false"})


def test_content_parts_are_joined_for_a_text_only_template() -> None:
    templates = ChatTemplates(TemplateChoice(gguf_default=GGUF_TEMPLATE), VOCAB)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": None},
    ]
    assert _render(templates, messages) == "[user]a\nb[assistant]"


def test_a_template_that_does_not_parse_is_an_error_at_load() -> None:
    with pytest.raises(TemplateRenderError, match="does not parse"):
        ChatTemplates(TemplateChoice(gguf_default="{% for %}"), VOCAB)


def test_the_generation_prompt_is_what_add_generation_prompt_appends() -> None:
    templates = ChatTemplates(TemplateChoice(gguf_default=THINKING + GGUF_TEMPLATE
                              + "{% if add_generation_prompt %}[assistant]<think>{% endif %}"),
                              VOCAB)  # fmt: skip
    assert templates.generation_prompt(templates.request(HELLO)) == "[assistant]<think>"
