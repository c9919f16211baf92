"""``POST /v1/audio/speech``: a 501 naming why, as the router answers it
(corral/http/worker_routes.py, ``SPEECH_REFUSAL``; docs/api.md)."""

from __future__ import annotations

from litestar import post

from corral.http.errors import ApiError
from corral.http.worker_routes import SPEECH, SPEECH_REFUSAL, worker_opt

__all__ = ["audio_routes"]


@post(SPEECH.paths, status_code=200, opt=worker_opt(SPEECH))
async def speech() -> None:
    raise ApiError(501, SPEECH_REFUSAL)


audio_routes = [speech]
