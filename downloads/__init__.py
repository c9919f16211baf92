"""Model downloads from the Hugging Face hub, run as ``python -m downloads`` children.

Not implemented yet: see the downloads issue. The package exists so the layout matches the SPEC.
"""

__all__: list[str] = []
