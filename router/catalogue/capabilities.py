"""What a model can do, decided once: the one answer every listing spells in its own words.

A model's capabilities are what it serves, from four places: its projector (what it reads
besides text), its GGUF header (a pooling type makes it an embedding model; fill-in-the-middle
tokens), its options (``embeddings`` in a preset makes a generating model answer embeddings too)
and its chat template (thinking, tools). A generating model takes tools where its template
has tool-call syntax, or where ``tool-mode = generic`` gives it Corral's generic JSON tool mode;
otherwise its worker answers a request with tools in text, as llama-server
(docs/tool-calls.md). :func:`capabilities` reads them; Corral's ``/models``, Ollama's
``/api/show`` and llama-server's single-model ``/v1/models`` only choose their words
(:meth:`Capabilities.corral_words`, :meth:`~Capabilities.ollama_words`,
:meth:`~Capabilities.llama_server_words`). :func:`is_embedding` is the one test of an embedding
model, which also starts its worker with ``--embeddings`` (router/workers/pool.py).

Headers are read before their vocabulary and kept per file version
(:func:`router.catalogue.model_details.model_header`), so asking again costs nothing.
"""

from __future__ import annotations

import re
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
    "serves_embeddings",
]

CHAT_TEMPLATE = "tokenizer.chat_template"
# What in a chat template shows it thinks (Ollama's test, kept as it was).
_THINKING_MARKS = ("<think>", "enable_thinking", "reasoning_content")
# What in a chat template shows it describes tools or writes tool calls: the router does not run
# templates (their workers do), so this reads the text where the worker probes it as llama.cpp
# does (worker/templates/capabilities.py). It matches the probe on every template llama.cpp
# ships but DeepSeek-R1-Distill-Llama's, which reads tool calls only where the probe does not.
_TOOL_MARKS = re.compile(r"\btool_calls\b|\btools\b(?!_)")


def is_embedding(metadata: Mapping[str, object]) -> bool:
    """Whether a GGUF header declares a pooling type (``<arch>.pooling_type``): an embedding
    model, which generates nothing useful."""
    return f"{metadata.get('general.architecture')}.pooling_type" in metadata


def declares_pooling(path: Path) -> bool:
    """Whether the model file is an embedding model's (:func:`is_embedding` of its header)."""
    return is_embedding(model_header(path))


def serves_embeddings(entry: CatalogueEntry, metadata: Mapping[str, object]) -> bool:
    """Whether the model's worker answers embeddings: as its options say, else as its header
    does (:func:`worker_argv <router.workers.launcher.worker_argv>` then turns them on)."""
    options = entry.model_options
    return options.flag("embeddings") if "embeddings" in options else is_embedding(metadata)


@dataclass(frozen=True, slots=True)
class Capabilities:
    inputs: tuple[str, ...]  # "text", then "image" and "audio" as its projector reads them
    projector: bool = False  # it has one, readable or not
    completion: bool = True  # it generates: not an embedding model
    embedding: bool = False  # it answers embeddings
    tools: bool = False  # it answers tool calls
    insert: bool = False  # fill-in-the-middle (/infill)
    thinking: bool = False

    def corral_words(self) -> list[str]:
        """``/models``'s ``capabilities``, which clients (the Web UI) check before offering to
        attach an image."""
        media = [{"image": "vision", "audio": "audio"}[kind] for kind in self.inputs[1:]]
        return [*self._serves(), *(["multimodal"] if media else []), *media]

    def _serves(self) -> list[str]:
        return [
            word
            for word, has in (("completion", self.completion), ("embedding", self.embedding))
            if has
        ]

    def ollama_words(self) -> list[str]:
        """Ollama's ``/api/show`` ``capabilities``, in Ollama's order."""
        found = [
            ("tools", self.tools),
            ("insert", self.insert),
            ("vision", "image" in self.inputs),
            ("thinking", self.thinking),
        ]
        return [*self._serves(), *(word for word, has in found if has)]

    def llama_server_words(self) -> list[str]:
        """llama-server's single-model ``/v1/models`` (``get_res_models``): with a projector,
        ``multimodal`` whatever it reads."""
        return ["completion", "multimodal"] if self.projector else ["completion"]


def capabilities(
    entry: CatalogueEntry, metadata: Mapping[str, Scalar] | None = None
) -> Capabilities:
    """What ``entry`` can do; ``metadata``: its header (with the chat template, for thinking),
    where the caller has read it. Without it only the projector and the options are read, and
    what the header and the template would add is left out (the listings that need it read
    it)."""
    inputs = tuple(input_modalities(entry.mmproj))
    if metadata is None:
        return Capabilities(
            inputs, projector=entry.mmproj is not None, embedding=serves_embeddings(entry, {})
        )
    template = str(metadata.get(CHAT_TEMPLATE, ""))
    generates = not is_embedding(metadata)
    generic = entry.model_options.word("tool-mode") == "generic"
    return Capabilities(
        inputs,
        projector=entry.mmproj is not None,
        completion=generates,
        embedding=serves_embeddings(entry, metadata),
        tools=generates and (generic or _TOOL_MARKS.search(template) is not None),
        insert="tokenizer.ggml.fim_pre_token_id" in metadata,
        thinking=any(mark in template for mark in _THINKING_MARKS),
    )
