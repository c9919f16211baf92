"""Model downloads from the Hugging Face hub into the shared hub cache (docs/protocol.md §1, §3).

``python -m downloads org/repo[:TAG]`` is the child a router starts for ``POST /models`` and
``corral pull`` starts to fetch a model. Modules: :mod:`~downloads.plan` (asking the hub which
files make up the model), :mod:`~downloads.transfer` (resumable, verified byte transfer),
:mod:`~downloads.runner` (one whole download) and :mod:`~downloads.child` (the child process).
Which files make up a model, and where they go, are the hub rules in :mod:`corral.hub`, shared
with the router's listing and removal.
"""

__all__: list[str] = []
