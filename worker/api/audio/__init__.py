"""OpenAI's audio routes: text to speech, refused (docs/api.md)."""

__all__: list[str] = []
