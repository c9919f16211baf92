"""One folder per API (as vLLM's entrypoints): protocol types, translation, shapes, routes."""
