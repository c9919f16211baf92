"""Routes about the model rather than generation: health, props, tokens, slots, metrics."""

__all__: list[str] = []
