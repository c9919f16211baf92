"""What a model can do, decided once: the one answer every listing spells in its own words.

A model's capabilities come from three places: its projector (what it reads besides text), its
GGUF header (a pooling type makes it an embedding model; fill-in-the-middle tokens) and its chat
template (tools, thinking). :func:`capabilities` reads them; Corral's ``/models``, Ollama's
``/api/show`` and llama-server's single-model ``/v1/models`` only choose their words
(:meth:`Capabilities.corral_words`, :meth:`~Capabilities.ollama_words`,
:meth:`~Capabilities.llama_server_words`). :func:`is_embedding` is the one test of an embedding
model, which also starts its worker with ``--embeddings`` (router/workers/pool.py).

Headers are read before their vocabulary and kept per file version
(:func:`router.catalogue.model_details.model_header`), so asking again costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from corral.hub.gguf_header import Scalar
from corral.hub.mmproj_inputs import input_modalities
from router.catalogue.catalogue import CatalogueEntry
from router.catalogue.model_details import model_header

__all__ = [
    "CHAT_TEMPLATE",
    "Capabilities",
    "capabilities",
    "declares_pooling",
    "is_embedding",
]

CHAT_TEMPLATE = "tokenizer.chat_template"
# What in a chat template shows it thinks (Ollama's test, kept as it was).
_THINKING_MARKS = ("<think>", "enable_thinking", "reasoning_content")


def is_embedding(metadata: Mapping[str, object]) -> bool:
    """Whether a GGUF header declares a pooling type (``<arch>.pooling_type``): an embedding
    model, which generates nothing useful."""
    return f"{metadata.get('general.architecture')}.pooling_type" in metadata


def declares_pooling(path: Path) -> bool:
    """Whether the model file is an embedding model's (:func:`is_embedding` of its header)."""
    return is_embedding(model_header(path))


@dataclass(frozen=True, slots=True)
class Capabilities:
    inputs: tuple[str, ...]  # "text", then "image" and "audio" as its projector reads them
    projector: bool = False  # it has one, readable or not
    embedding: bool = False
    tools: bool = False  # its chat template takes tools
    insert: bool = False  # fill-in-the-middle (/infill)
    thinking: bool = False

    def corral_words(self) -> list[str]:
        """``/models``'s ``capabilities``, which clients (the Web UI) check before offering to
        attach an image."""
        media = [{"image": "vision", "audio": "audio"}[kind] for kind in self.inputs[1:]]
        return ["completion", *(["multimodal"] if media else []), *media]

    def ollama_words(self) -> list[str]:
        """Ollama's ``/api/show`` ``capabilities``: an embedding model does nothing else."""
        if self.embedding:
            return ["embedding"]
        found = [
            ("tools", self.tools),
            ("insert", self.insert),
            ("vision", "image" in self.inputs),
            ("thinking", self.thinking),
        ]
        return ["completion", *(word for word, has in found if has)]

    def llama_server_words(self) -> list[str]:
        """llama-server's single-model ``/v1/models`` (``get_res_models``): with a projector,
        ``multimodal`` whatever it reads."""
        return ["completion", "multimodal"] if self.projector else ["completion"]


def capabilities(
    entry: CatalogueEntry, metadata: Mapping[str, Scalar] | None = None
) -> Capabilities:
    """What ``entry`` can do; ``metadata``: its whole header (with the chat template), where the
    caller has read it. Without it only the projector is read, and what the header and the
    template would add is left out (the listings that need it read it)."""
    inputs = tuple(input_modalities(entry.mmproj))
    if metadata is None:
        return Capabilities(inputs, projector=entry.mmproj is not None)
    template = str(metadata.get(CHAT_TEMPLATE, ""))
    return Capabilities(
        inputs,
        projector=entry.mmproj is not None,
        embedding=is_embedding(metadata),
        tools="tools" in template,
        insert="tokenizer.ggml.fim_pre_token_id" in metadata,
        thinking=any(mark in template for mark in _THINKING_MARKS),
    )
