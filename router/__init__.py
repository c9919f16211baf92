"""Corral's router: the public HTTP endpoint, the model catalogue and the worker supervisor."""

__all__: list[str] = []
