"""One decision of what a model can do, spelled by each listing in its own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.catalogue.capabilities import (
    Capabilities,
    capabilities,
    declares_pooling,
    is_embedding,
)
from router.catalogue.catalogue import CatalogueEntry
from router.catalogue.model_details import model_details
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_mmproj import write_tiny_audio_mmproj, write_tiny_mmproj
from tests.support.template_goldens import golden_cases, golden_template

THINKING = "{% if enable_thinking %}<think>{% endif %}{{ messages[0].content }}"
TOOLS = "{% if tools %}{{ tools | tojson }}{% endif %}{{ messages[0].content }}"


def _entry(
    path: Path, mmproj: Path | None = None, options: tuple[tuple[str, str], ...] = ()
) -> CatalogueEntry:
    return CatalogueEntry(path.stem, path, "models_dir", mmproj=mmproj, options=options)


def test_an_embedding_model_is_one_in_every_listing(tmp_path: Path) -> None:
    entry = _entry(write_tiny_gguf(tmp_path / "embed.gguf", pooling="mean"))
    assert declares_pooling(entry.path)
    can = capabilities(entry, model_details(entry).metadata)
    assert can.embedding
    # It generates nothing useful, and takes no tools.
    assert can.ollama_words() == can.corral_words() == ["embedding"]
    # llama-server's single-model list says only completion and multimodal, whatever it is.
    assert can.llama_server_words() == ["completion"]


def test_a_generating_model_with_embeddings_on_serves_both(tmp_path: Path) -> None:
    """``embeddings = on`` in a preset: its worker answers embeddings besides generating, and
    every listing says so (docs/api.md)."""
    path = write_tiny_gguf(tmp_path / "both.gguf")
    entry = _entry(path, options=(("embeddings", "true"),))
    can = capabilities(entry, model_details(entry).metadata)
    assert can.ollama_words() == ["completion", "embedding"]
    assert can.corral_words() == ["completion", "embedding"]
    # Without the header (Corral's listings before a load), the options still say it.
    assert capabilities(entry).corral_words() == ["completion", "embedding"]


def test_a_chat_model_s_template_and_tokens_say_the_rest(tmp_path: Path) -> None:
    thinking = _entry(write_tiny_gguf(tmp_path / "think.gguf", chat_template=THINKING, fim=True))
    can = capabilities(thinking, model_details(thinking).metadata)
    assert not declares_pooling(thinking.path)
    assert can.ollama_words() == ["completion", "insert", "thinking"]
    tools = _entry(write_tiny_gguf(tmp_path / "tools.gguf", chat_template=TOOLS))
    assert capabilities(tools, model_details(tools).metadata).ollama_words() == [
        "completion",
        "tools",
    ]


def test_tools_where_the_template_has_them_or_the_generic_mode_is_on(tmp_path: Path) -> None:
    """A template with no tool-call syntax is answered in text, as llama-server, so it takes
    no tools, unless ``tool-mode = generic`` (docs/tool-calls.md)."""
    path = write_tiny_gguf(tmp_path / "chatml.gguf")
    plain, generic = _entry(path), _entry(path, options=(("tool-mode", "generic"),))
    assert capabilities(plain, model_details(plain).metadata).ollama_words() == ["completion"]
    assert capabilities(generic, model_details(generic).metadata).ollama_words() == [
        "completion",
        "tools",
    ]


def test_a_projector_adds_what_it_reads(tmp_path: Path) -> None:
    model = write_tiny_gguf(tmp_path / "model.gguf")
    vision = capabilities(_entry(model, write_tiny_mmproj(tmp_path / "mmproj-v.gguf")))
    assert vision.corral_words() == ["completion", "multimodal", "vision"]
    assert vision.llama_server_words() == ["completion", "multimodal"]
    audio = capabilities(_entry(model, write_tiny_audio_mmproj(tmp_path / "mmproj-a.gguf")))
    assert audio.inputs == ("text", "audio")
    assert audio.corral_words() == ["completion", "multimodal", "audio"]
    # A projector that cannot be read reads nothing, but llama-server's list still says so.
    broken = _entry(model, tmp_path / "missing-mmproj.gguf")
    assert capabilities(broken).corral_words() == ["completion"]
    assert capabilities(broken).llama_server_words() == ["completion", "multimodal"]


@pytest.mark.parametrize(
    ("metadata", "embedding"),
    [
        ({"general.architecture": "bert", "bert.pooling_type": 1}, True),
        ({"general.architecture": "llama", "bert.pooling_type": 1}, False),
        ({}, False),
    ],
)
def test_an_embedding_model_declares_its_architecture_s_pooling(
    metadata: dict[str, object], embedding: bool
) -> None:
    assert is_embedding(metadata) is embedding


def test_without_the_header_only_the_projector_is_read() -> None:
    can = Capabilities(("text",))
    assert can.ollama_words() == ["completion"]
    assert can.corral_words() == ["completion"]


def test_tools_are_the_worker_s_probe_on_llama_cpp_s_templates(tmp_path: Path) -> None:
    """The router reads the template's text where the worker probes it (llama.cpp's caps): the
    same answer for every template llama.cpp ships but one (router/catalogue/capabilities.py)."""
    differing = []
    for stem in sorted({case.template for case in golden_cases()}):
        golden = golden_template(stem)
        path = write_tiny_gguf(tmp_path / f"{stem}.gguf", chat_template=golden["source"])
        caps, entry = golden["caps"], _entry(path)
        probed = caps["supports_tools"] or caps["supports_tool_calls"]
        if capabilities(entry, model_details(entry).metadata).tools != probed:
            differing.append(stem)
    assert differing == ["deepseek-ai-DeepSeek-R1-Distill-Llama-8B"]
