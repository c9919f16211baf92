"""``POST /v1/audio/transcriptions`` as llama-server answers it: the multipart upload becomes a
chat with the audio attached (``server-chat.cpp``, ``convert_transcriptions_to_chatcmpl``), and
the answer is the chat's text (``server-task.cpp``, ``to_json_oaicompat_asr``).

llama-server answers ``response_format`` ``json`` only; Corral also answers OpenAI's ``text``,
``verbose_json``, ``srt`` and ``vtt``. The model writes no timestamps, so their one segment spans
the whole clip, as long as libmtmd decodes it (docs/api.md).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from litestar.datastructures import UploadFile

from corral.http.errors import ApiError
from corral.http.worker_routes import MAX_AUDIO_UPLOAD, audio_upload_refusal
from corral.options.sampling_fields import TEMPERATURE
from worker.answer.answer_context import AnswerContext
from worker.answer.response_shape import ResponseShape
from worker.chat.formats import OutputParser, OutputStream
from worker.chat.request import ChatRequest
from worker.engine.generation import Finished
from worker.state import AnyRequest

__all__ = ["FORMATS", "TranscriptionForm", "TranscriptionShape", "read_form", "transcript"]

FORMATS = ("json", "text", "verbose_json", "srt", "vtt")
_N = TypeVar("_N", int, float)


@dataclass(frozen=True, slots=True)
class TranscriptionForm:
    """What the upload asks: OpenAI's fields, as their form parts give them."""

    audio: bytes
    prompt: str
    language: str
    response_format: str
    stream: bool
    temperature: float | None
    max_tokens: int | None  # llama-server's own field; OpenAI's API has none


def _text(form: Any, name: str, default: str = "") -> str:
    value = form.get(name, default)
    if not isinstance(value, str):
        raise ApiError(400, f"Field '{name}' must be text")
    return value


async def read_form(request: AnyRequest) -> TranscriptionForm:
    """The upload's fields; 400 naming what is wrong, 413 for too large a file."""
    form = await request.form()
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise ApiError(400, "No input file found for transcription")
    audio = await upload.read()
    if len(audio) > MAX_AUDIO_UPLOAD:
        raise ApiError(413, audio_upload_refusal(len(audio)))
    response_format = _text(form, "response_format", "json")
    if response_format not in FORMATS:
        raise ApiError(
            400, f"Field 'response_format': '{response_format}' is not one of {', '.join(FORMATS)}"
        )
    return TranscriptionForm(
        audio,
        _text(form, "prompt"),
        _text(form, "language"),
        response_format,
        _text(form, "stream", "false") == "true",
        _number(form, TEMPERATURE.request, float),
        _number(form, "max_tokens", int),
    )


def _number(form: Any, name: str, kind: Callable[[str], _N]) -> _N | None:
    """A number the form gives as text, as llama-server converts it; 400 when it is none."""
    text = _text(form, name)
    try:
        return kind(text) if text else None
    except ValueError:
        raise ApiError(400, f"Field '{name}': '{text}' is not a number") from None


def chat_request(form: TranscriptionForm, template_source: str) -> ChatRequest:
    """The chat llama-server makes of it: its ASR preset (``common_chat_get_asr_prompt``: LFM2's
    system prompt, else a user instruction) or the upload's prompt, then the audio."""
    lfm2 = "<|tool_list_start|>" in template_source and "<|tool_list_end|>" in template_source
    system, instruction = ("Perform ASR.", "") if lfm2 else ("", "Transcribe audio to text")
    text = form.prompt or instruction
    if form.language:
        text += f" (language: {form.language})"
    audio = {"data": base64.b64encode(form.audio).decode(), "format": "wav"}
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts.append({"type": "input_audio", "input_audio": audio})
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": parts})
    body: dict[str, Any] = {"messages": messages, "stream": form.stream}
    if form.temperature is not None:
        body[TEMPERATURE.request] = form.temperature
    if form.max_tokens is not None:
        body["max_tokens"] = form.max_tokens
    return msgspec.convert(body, ChatRequest)


class TranscriptionShape(ResponseShape):
    """llama-server's ``transcript.text.done`` answer, or its stream of ``transcript.text.delta``
    events; the text is the answer's content, without any thinking."""

    id_prefix, id_digits = "", 0

    def __init__(self, context: AnswerContext, parser: OutputParser) -> None:
        super().__init__(context)
        self._parser = parser
        self._stream = OutputStream(parser)

    def whole(self, text: str, finished: Finished) -> dict[str, Any]:
        return self._done(self._parser.whole(text).content, finished)

    def chunk(self, text: str) -> dict[str, Any] | None:
        delta = self._stream.feed(text).content
        return {"type": "transcript.text.delta", "delta": delta} if delta else None

    def closing(self, finished: Finished) -> dict[str, Any]:
        self._stream.finish()
        return self._done(self._stream.sent.content, finished)

    def _done(self, text: str, finished: Finished) -> dict[str, Any]:
        return {
            "type": "transcript.text.done",
            "text": text,
            "usage": {
                "type": "tokens",
                "input_tokens": finished.prompt_tokens,
                "output_tokens": finished.predicted_tokens,
                "total_tokens": finished.prompt_tokens + finished.predicted_tokens,
                "input_tokens_details": {"cached_tokens": finished.cached_tokens},
            },
        }


def _stamp(seconds: float, mark: str) -> str:
    millis = round(seconds * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    return f"{hours:02}:{minutes:02}:{millis // 1000:02}{mark}{millis % 1000:03}"


def transcript(done: dict[str, Any], form: TranscriptionForm, seconds: float) -> Any:
    """The answer in the asked format: a JSON value for ``verbose_json``, else the text (``text``,
    ``srt``, ``vtt``); ``json`` is llama-server's body as it is."""
    text: str = done["text"]
    spoken = text.strip()
    if form.response_format == "text":
        return text
    if form.response_format == "srt":
        return f"1\n{_stamp(0, ',')} --> {_stamp(seconds, ',')}\n{spoken}\n"
    if form.response_format == "vtt":
        return f"WEBVTT\n\n{_stamp(0, '.')} --> {_stamp(seconds, '.')}\n{spoken}\n"
    segment = {"id": 0, "seek": 0, "start": 0.0, "end": seconds, "text": text, "tokens": [],
               TEMPERATURE.request: form.temperature or 0.0, "avg_logprob": 0.0,
               "compression_ratio": 0.0, "no_speech_prob": 0.0}  # fmt: skip
    return {
        "task": "transcribe",
        "language": form.language or "unknown",
        "duration": seconds,
        "text": text,
        "segments": [segment],
        "usage": {"type": "duration", "seconds": seconds},
    }
