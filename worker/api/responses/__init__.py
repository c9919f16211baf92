"""OpenAI's Responses API, answered by the chat pipeline."""

__all__: list[str] = []
