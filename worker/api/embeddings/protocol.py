"""Request bodies of the embedding and reranking routes."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

__all__ = ["EmbeddingRequest", "Input", "RerankRequest"]

# Any of llama-server's prompt shapes (worker.engine.prompt_inputs), told apart there: msgspec
# unions
# take only one list type.
Input = str | list[Any] | dict[str, Any]


class EmbeddingRequest(msgspec.Struct, kw_only=True):
    """Every embedding route's body, as llama-server reads it: ``input`` (OpenAI's) or, failing
    that, ``content`` (llama-server's own, which also asks for its answer shape)."""

    input: Input | msgspec.UnsetType = msgspec.UNSET
    content: Input | msgspec.UnsetType = msgspec.UNSET
    model: str | None = None
    encoding_format: str = "float"
    # llama-server's choice of norm (worker.engine.embedding_context.normalized); unset: the
    # worker's --embd-normalize.
    embd_normalize: Annotated[int, Meta(ge=-1)] | None = None
    # Corral's own: the router sets it for Ollama's /api/embed, which a generative model answers
    # (from an embeddings context made on first use) even when run without --embeddings.
    generative: bool = False


class RerankRequest(msgspec.Struct, kw_only=True):
    # query, documents and texts are checked by hand so that their errors carry upstream's
    # messages, and so that a present-but-null field can be told from a missing one.
    query: Any = msgspec.UNSET
    documents: Any = None
    texts: Any = msgspec.UNSET
    top_n: Annotated[int, Meta(ge=0)] | None = None
    return_text: bool = False
    model: str | None = None
