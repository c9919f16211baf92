"""Chat template choice and rendering (worker.templates), without a model."""

from __future__ import annotations

from typing import Any

import pytest

from worker.templates import ChatTemplate

TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
GGUF_TEMPLATE = "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"


def test_the_gguf_template_is_used_unless_one_is_asked_for() -> None:
    template = ChatTemplate.choose(None, GGUF_TEMPLATE, **TOKENS)
    assert (template.name, template.source) == ("gguf", GGUF_TEMPLATE)


def test_a_model_without_a_template_gets_chatml() -> None:
    template = ChatTemplate.choose(None, None, **TOKENS)
    assert template.name == "chatml"
    prompt = template.render([{"role": "user", "content": "hi"}])
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.parametrize(("wanted", "name"), [("llama-3", "llama3"), ("gemma2", "gemma")])
def test_builtin_names_and_their_aliases(wanted: str, name: str) -> None:
    assert ChatTemplate.choose(wanted, GGUF_TEMPLATE, **TOKENS).name == name


def test_other_text_is_a_custom_jinja_template() -> None:
    template = ChatTemplate.choose("{{ bos_token }}{{ messages[0]['content'] }}", None, **TOKENS)
    assert template.name == "custom"
    assert template.render([{"role": "user", "content": "hi"}]) == "<s>hi"


def test_content_parts_and_missing_content_render_as_text() -> None:
    template = ChatTemplate.choose(None, GGUF_TEMPLATE, **TOKENS)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"},
                                     {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": None},
    ]  # fmt: skip
    assert template.render(messages) == "[user]ab[assistant]"


def test_the_gemma_template_names_the_assistant_model() -> None:
    template = ChatTemplate.choose("gemma", None, **TOKENS)
    prompt = template.render([{"role": "assistant", "content": " ok "}])
    assert prompt == "<s><start_of_turn>model\nok<end_of_turn>\n<start_of_turn>model\n"
