"""The Hugging Face hub's rules as llama.cpp applies them, one rule per module.

:mod:`~corral.hub.names` (repository ids, references and quant tags),
:mod:`~corral.hub.companions` (files that go with a model but are not one),
:mod:`~corral.hub.shards` (split models), :mod:`~corral.hub.mmproj` (which projector a model
uses), :mod:`~corral.hub.cache_layout` (huggingface_hub's folders), :mod:`~corral.hub.cache_scan`
(which models the cache holds), :mod:`~corral.hub.removal` (deleting one),
:mod:`~corral.hub.sizes` and :mod:`~corral.hub.gguf_header` (a GGUF's metadata, over the bounded
:mod:`~corral.hub.gguf_cursor`).

Nothing here imports huggingface_hub: the router and the CLI use these modules too.
"""

__all__: list[str] = []
