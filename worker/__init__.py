"""Corral's worker: serves one GGUF model over loopback HTTP, like a single-model llama-server."""

__all__: list[str] = []
