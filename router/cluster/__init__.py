"""The router on a Ray cluster (``corral serve --cluster``, docs/scaling.md): imported only then."""
