"""The router's children (workers and downloads) and how they talk to it (docs/protocol.md §1).

:mod:`~corral.children.protocol` has both ends of the stdout/stdin line protocol,
:mod:`~corral.children.download_payloads` the download child's messages,
:mod:`~corral.children.environment` what a child inherits, and
:mod:`~corral.children.lifeline` what ties a child's life to the router's.
"""

__all__: list[str] = []
