"""OpenAI's chat completions (``/v1/chat/completions``), the chat pipeline's native API."""

__all__: list[str] = []
