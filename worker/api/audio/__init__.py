"""OpenAI's audio routes: speech to text through an audio projector, text to speech refused
(docs/api.md)."""

__all__: list[str] = []
