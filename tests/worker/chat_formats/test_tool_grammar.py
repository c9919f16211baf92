"""Each family's tool grammar, eager and lazy, is one llama.cpp parses (real vocabulary)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llama_cpp
import pytest
from llama_cpp._internals import LlamaModel

from worker.chat_formats import ThinkingTags, families, tool_grammar
from worker.grammar_sampler import GrammarSampler

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "enum": ["Oslo", "Lima"]}},
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "now"}},
]
SYNTAXES = list(families.__all__)


@pytest.fixture(scope="module")
def vocab(models_dir: Path) -> Iterator[Any]:
    llama_cpp.llama_backend_init()
    model = LlamaModel(
        path_model=str(models_dir / "alpha.gguf"),
        params=llama_cpp.llama_model_default_params(),
        verbose=False,
    )
    yield model.vocab
    model.close()  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("name", SYNTAXES)
@pytest.mark.parametrize("lazy", [True, False])
def test_the_grammar_parses_in_llama_cpp(vocab: Any, name: str, lazy: bool) -> None:
    grammar = tool_grammar(getattr(families, name), TOOLS, lazy=lazy, parallel=True)
    assert bool(grammar.triggers) is lazy
    GrammarSampler(vocab, grammar.gbnf, grammar.triggers).free()


@pytest.mark.parametrize("name", SYNTAXES)
def test_an_eager_grammar_lets_a_thinking_model_think_first(vocab: Any, name: str) -> None:
    tags = ThinkingTags("[THINK]", "[/THINK]") if name == "MISTRAL" else ThinkingTags()
    grammar = tool_grammar(getattr(families, name), TOOLS, lazy=False, parallel=False,
                           thinking=tags)  # fmt: skip
    assert grammar.gbnf.splitlines()[-1].startswith(f"root ::= ({_gbnf(tags.start)}? thought")
    GrammarSampler(vocab, grammar.gbnf, grammar.triggers).free()


def _gbnf(text: str) -> str:
    return '"' + text + '"'


def test_the_grammar_names_only_the_given_tools() -> None:
    grammar = tool_grammar(families.HERMES, TOOLS[1:], lazy=True, parallel=False)
    assert '"\\"now\\""' in grammar.gbnf
    assert "get_weather" not in grammar.gbnf
    assert grammar.gbnf.endswith("root ::= tool-call")  # one call only


def test_triggers_are_escaped_regular_expressions() -> None:
    assert tool_grammar(families.GRANITE, TOOLS, lazy=True, parallel=True).triggers == (
        r"<\|tool_call\|>",
    )
    assert tool_grammar(families.LLAMA_3_JSON, TOOLS, lazy=True, parallel=True).triggers == (
        r"^\s*(\{)",
    )
