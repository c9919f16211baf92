"""Corral's shared core: what the router, the workers and the download children all speak.

The router (``router/``), the worker (``worker/``) and the downloader (``downloads/``) never import
one another; each imports only this package, which imports none of them (``tests/test_layering.py``
and the import-linter contracts in ``pyproject.toml`` keep it so). Modules:

- :mod:`corral.children`: the stdout/stdin protocol between the router and its children, its
  payloads, the environment children get, and the lifeline that ties them to the router.
- :mod:`corral.hub`: the Hugging Face hub's naming and cache rules, one rule per module.
- :mod:`corral.options.table`: the one table of per-model options, and its command-line flags.
- :mod:`corral.http.errors`, :mod:`corral.http.streaming`, :mod:`corral.http.disconnect`: the HTTP
pieces both
  servers share (the error JSON, closing streams, noticing a client leave).
- :mod:`corral.logs`, :mod:`corral.http.sockets`, :mod:`corral.prometheus`: logging setup, listening
  sockets and the Prometheus text format.
"""

__all__: list[str] = []
