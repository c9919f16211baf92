"""One router for the Ollama API's tests of a module, with the official ``ollama`` client.

Its models: ``alpha`` (ChatML; alias ``first`` from a preset), ``thinker`` (a template that
opens the thinking, unless ``enable_thinking`` is false), ``coder`` (fill-in-the-middle tokens,
for ``suffix``), ``embedder`` (an embedding model: its GGUF declares a pooling type, so it
answers embeddings without a flag), ``seer`` (with a projector: it reads images),
``caller`` (Hermes-style tool calls in its template), ``agent`` (the same template, and
weights that prefer ``<tool_call>`` whatever the context and end the turn after
``</tool_call>``: offered tools, it calls one from real generation, the lazy grammar writing it)
and ``dual`` (a chat model whose preset turns ``embeddings`` on: it answers both).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import ollama
import pytest

from tests.support.files.hermes_model import HERMES_TEMPLATE, USER_TOKENS
from tests.support.files.tiny_gguf import CHATML_TEMPLATE, write_tiny_gguf
from tests.support.files.tiny_mmproj import write_tiny_mmproj
from tests.support.router_process import RouterProcess, running_router

# ChatML whose generation prompt opens the thinking, as Qwen 3's and DeepSeek R1's do.
THINKING_TEMPLATE = CHATML_TEMPLATE.replace(
    "{{- '<|im_start|>assistant\\n' -}}",
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and not enable_thinking -%}"
    "{{- '<think>\\n\\n</think>\\n\\n' -}}{%- else -%}{{- '<think>\\n' -}}{%- endif -%}",
)


@pytest.fixture(scope="module")
def ollama_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("ollama-models")
    write_tiny_gguf(directory / "alpha.gguf", name="alpha")
    write_tiny_gguf(
        directory / "thinker.gguf",
        name="thinker",
        chat_template=THINKING_TEMPLATE,
        user_tokens=("<think>", "</think>"),
    )
    write_tiny_gguf(directory / "coder.gguf", name="coder", fim=True)
    write_tiny_gguf(directory / "embedder.gguf", name="embedder", pooling="mean")
    write_tiny_gguf(
        directory / "caller.gguf",
        name="caller",
        chat_template=HERMES_TEMPLATE,
        user_tokens=USER_TOKENS,
    )
    write_tiny_gguf(
        directory / "agent.gguf",
        name="agent",
        chat_template=HERMES_TEMPLATE,
        user_tokens=USER_TOKENS,
        prefers=("<tool_call>", "</tool_call>", "{", '"'),
        ends_after="</tool_call>",
    )
    write_tiny_gguf(directory / "dual.gguf", name="dual", seed=2)
    (directory / "seer").mkdir()
    write_tiny_gguf(directory / "seer" / "seer-Q8_0.gguf", name="seer", attention_gain=10.0)
    write_tiny_mmproj(directory / "seer" / "mmproj-seer-F32.gguf")
    (directory / "models.ini").write_text("[alpha]\nalias = first\n\n[dual]\nembeddings = on\n")
    return directory


def start_router(models: Path, *extra: str) -> Iterator[RouterProcess]:
    args = ["--models-dir", str(models), "--models-preset", str(models / "models.ini")]
    with running_router([*args, "--ctx-size", "512", *extra]) as process:
        yield process


@pytest.fixture(scope="module")
def shared_router(ollama_models: Path) -> Iterator[RouterProcess]:
    yield from start_router(ollama_models)


@pytest.fixture(scope="module")
def client(shared_router: RouterProcess) -> Iterator[ollama.Client]:
    with ollama.Client(host=shared_router.url, timeout=120) as official:
        yield official
