"""OpenAI's audio routes: ``POST /v1/audio/transcriptions`` for a model whose projector hears
(worker/api/audio/transcription.py), and ``POST /v1/audio/speech``, a 501 naming why, as the
router answers it (corral/http/worker_routes.py, ``SPEECH_REFUSAL``; docs/api.md)."""

from __future__ import annotations

import msgspec
from litestar import post
from litestar.response.base import ASGIResponse

from corral.http.errors import ApiError, json_response
from corral.http.worker_routes import SPEECH, SPEECH_REFUSAL, TRANSCRIPTIONS, worker_opt
from worker.api.audio.transcription import (
    TranscriptionShape,
    chat_request,
    read_form,
    transcript,
)
from worker.chat.pipeline import run_chat
from worker.media.content import MediaFile
from worker.state import AnyRequest, loaded

__all__ = ["audio_routes"]


@post(TRANSCRIPTIONS.paths, status_code=200, opt=worker_opt(TRANSCRIPTIONS))
async def transcriptions(request: AnyRequest) -> ASGIResponse:
    engine, model = loaded(request)
    projector = model.projector
    if projector is None or not model.modalities.audio:
        # llama-server answers 501; a request the model cannot serve is the client's to fix.
        raise ApiError(
            400,
            "The current model does not support audio input: it has no audio projector (--mmproj)",
        )
    form = await read_form(request)
    if form.stream and form.response_format != "json":
        raise ApiError(400, "a streamed transcription is answered in response_format json only")
    try:
        body = chat_request(form, model.template.source)
    except msgspec.ValidationError as exc:
        raise ApiError(400, str(exc)) from None
    answer = await run_chat(request, body, TranscriptionShape)
    if form.response_format == "json" or answer.status_code != 200:
        return answer
    file = MediaFile(form.audio, "file")
    seconds = await engine.call(lambda: projector.audio_seconds(file))
    shaped = transcript(msgspec.json.decode(answer.body), form, seconds)
    if isinstance(shaped, str):
        return ASGIResponse(body=shaped.encode(), media_type="text/plain; charset=utf-8")
    return json_response(shaped)


@post(SPEECH.paths, status_code=200, opt=worker_opt(SPEECH))
async def speech() -> None:
    raise ApiError(501, SPEECH_REFUSAL)


audio_routes = [transcriptions, speech]
