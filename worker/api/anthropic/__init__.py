"""Anthropic's Messages API, answered by the chat pipeline."""

__all__: list[str] = []
