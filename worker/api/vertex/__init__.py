"""Vertex AI's prediction protocol (``AIP_MODE=PREDICTION``), as llama-server serves it."""

__all__: list[str] = []
