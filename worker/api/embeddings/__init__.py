"""Vectors instead of tokens: OpenAI's and llama-server's embeddings, and reranking."""

__all__: list[str] = []
