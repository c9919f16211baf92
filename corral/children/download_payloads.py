"""What a download child tells the router, as ``downloading`` state payloads (docs/protocol.md §1).

Upstream's payloads are ``{"url","downloaded","total"}`` and ``{"result": …}``; Corral adds the
cache name being fetched (``model``), so a download asked for as ``org/repo`` can be cancelled as
``org/repo:Q4_K_M``, and the reason of a failure (``error``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "DOWNLOADING_STATE",
    "DownloadOutcome",
    "DownloadProgress",
    "decode_download_payload",
]

DOWNLOADING_STATE = "downloading"


class DownloadProgress(msgspec.Struct, frozen=True):
    url: str  # the file's resolve URL on the hub: one progress line per file
    downloaded: int
    total: int
    model: str = ""  # "org/repo:TAG", the name the model will have in the cache
    path: str = ""  # the file's path in the repository, for progress bars


class DownloadOutcome(msgspec.Struct, frozen=True, omit_defaults=True):
    result: Literal["download_finished", "download_failed"]
    error: str | None = None
    model: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.result == "download_finished"


def decode_download_payload(payload: dict[str, Any]) -> DownloadProgress | DownloadOutcome:
    """Raises ``msgspec.ValidationError`` for a payload that is neither."""
    if "result" in payload:
        return msgspec.convert(payload, DownloadOutcome)
    return msgspec.convert(payload, DownloadProgress)
