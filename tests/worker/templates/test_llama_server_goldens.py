"""Every chat template llama.cpp ships, rendered by Corral and compared byte for byte with
what llama-server rendered (tests/worker/template_goldens, scripts/record_template_goldens.py).

The vocabulary is the tiny test GGUF's, which the goldens were recorded with: BOS ``<s>``
(added by its tokenizer, so stripped from the prompt), EOS ``</s>`` (not added).
"""

from __future__ import annotations

import copy

import pytest

from tests.support.template_goldens import GoldenCase, golden_cases, golden_template, recorded_at
from worker.templates import ChatTemplates, TemplateChoice, TemplateRenderError, VocabTokens

TINY_VOCAB = VocabTokens(bos_token="<s>", eos_token="</s>", add_bos=True, add_eos=False)
CASES = golden_cases()
_templates: dict[str, ChatTemplates] = {}


def _templates_of(stem: str) -> ChatTemplates:
    if stem not in _templates:
        source = golden_template(stem)["source"]
        when = recorded_at()
        _templates[stem] = ChatTemplates(
            TemplateChoice(gguf_default=source), TINY_VOCAB, now=lambda: when
        )
    return _templates[stem]


def _render(case: GoldenCase) -> str:
    templates = _templates_of(case.template)
    body = copy.deepcopy(case.body)
    request = templates.request(
        body["messages"], body.get("tools"), body.get("chat_template_kwargs")
    )
    return templates.render(request)


def test_the_goldens_cover_the_issue_s_277_prompts() -> None:
    four = [c for c in CASES if c.conversation in ("user", "dialogue", "tools", "tool_result")]
    assert len({c.template for c in four}) == 70
    assert sum(c.prompt is not None for c in four) == 277


@pytest.mark.parametrize("case", [c for c in CASES if c.prompt is not None], ids=lambda c: c.id)
def test_the_prompt_is_llama_server_s_byte_for_byte(case: GoldenCase) -> None:
    assert _render(case) == case.prompt


@pytest.mark.parametrize("case", [c for c in CASES if c.prompt is None], ids=lambda c: c.id)
def test_what_llama_server_refuses_is_refused(case: GoldenCase) -> None:
    with pytest.raises(TemplateRenderError):
        _render(case)


@pytest.mark.parametrize("stem", sorted({c.template for c in CASES}))
def test_capabilities_are_llama_server_s(stem: str) -> None:
    assert _templates_of(stem).props_caps() == golden_template(stem)["caps"]
