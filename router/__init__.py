"""Corral's router: the public HTTP endpoint, the model catalogue and the worker supervisor.

Kept import-light on purpose: worker and download children import ``router.child_protocol``.
"""

__all__: list[str] = []
