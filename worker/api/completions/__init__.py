"""Raw-prompt generation: OpenAI's ``/v1/completions``, llama-server's ``/completion`` and
``/infill``."""

__all__: list[str] = []
