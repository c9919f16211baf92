"""Model downloads from the Hugging Face hub into the shared hub cache (SPEC §1, §3, §7).

``python -m downloads org/repo[:TAG]`` is the child the router starts for ``POST /models``;
``corral pull`` runs the same code in-process. Modules: :mod:`~downloads.selection` (which files
make up a model), :mod:`~downloads.plan` (asking the hub), :mod:`~downloads.transfer` (resumable,
verified byte transfer), :mod:`~downloads.cache_layout` (huggingface_hub's cache layout),
:mod:`~downloads.runner` (one whole download), :mod:`~downloads.cache_files` (removal, partial
sweeping, sizes) and :mod:`~downloads.child` (the router's child process).

Only :mod:`~downloads.plan`, :mod:`~downloads.runner` and :mod:`~downloads.child` import
huggingface_hub; the router imports the light modules only.
"""

__all__: list[str] = []
