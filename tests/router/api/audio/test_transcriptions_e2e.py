"""``POST /v1/audio/transcriptions`` through ``corral serve`` with the official ``openai`` client:
the upload reaches the worker of the model its form names, which hears it through its audio
projector and answers as llama-server does, in each of OpenAI's formats; a model without a
projector, too large an upload and an unknown format are each refused (docs/api.md)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from corral.http.worker_routes import MAX_AUDIO_UPLOAD
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_media import png_bytes, wav_bytes
from tests.support.files.tiny_mmproj import write_tiny_audio_mmproj
from tests.support.router_process import RouterProcess, running_router

SECONDS = 0.5  # the clip's length (tiny_media.wav_bytes)
# llama-server's own max_tokens field keeps the random-weight model's answers short.
SHORT: dict[str, Any] = {"temperature": 0, "extra_body": {"max_tokens": 8}}


@pytest.fixture(scope="module")
def router(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    folder = tmp_path_factory.mktemp("ear-models")
    (folder / "ear").mkdir()
    write_tiny_gguf(folder / "ear" / "ear-Q8_0.gguf", name="ear", attention_gain=10.0)
    write_tiny_audio_mmproj(folder / "ear" / "mmproj-ear-F32.gguf")
    (folder / "alpha.gguf").symlink_to(models_dir / "alpha.gguf")
    # A clip costs 750 tokens: the context and the batch are sized for one.
    args = ["--models-dir", str(folder), "--ctx-size", "2048", "--batch-size", "1024"]
    with running_router(args) as process:
        yield process


@pytest.fixture(scope="module")
def client(router: RouterProcess) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=router.url + "/v1", api_key="unused", max_retries=0, timeout=120
    ) as official:
        yield official


def _clip() -> tuple[str, bytes, str]:
    return ("clip.wav", wav_bytes(SECONDS), "audio/wav")


def test_the_openai_client_gets_the_model_s_transcript(client: openai.OpenAI) -> None:
    heard = client.audio.transcriptions.create(model="ear", file=_clip(), **SHORT)
    assert heard.text
    raw = client.audio.transcriptions.with_raw_response.create(model="ear", file=_clip(), **SHORT)
    body = json.loads(raw.http_response.text)
    # llama-server's answer: the chat's text, and its token counts.
    assert body["type"] == "transcript.text.done"
    assert body["text"] == heard.text  # temperature 0: the same clip, the same words
    usage = body["usage"]
    assert usage["type"] == "tokens"
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_each_format_words_the_same_transcript(client: openai.OpenAI) -> None:
    text = client.audio.transcriptions.create(
        model="ear", file=_clip(), **SHORT, response_format="text"
    )
    assert isinstance(text, str)
    assert text
    srt = client.audio.transcriptions.create(
        model="ear", file=_clip(), **SHORT, response_format="srt"
    )
    assert srt == f"1\n00:00:00,000 --> 00:00:00,500\n{text.strip()}\n"
    vtt = client.audio.transcriptions.create(
        model="ear", file=_clip(), **SHORT, response_format="vtt"
    )
    assert vtt == f"WEBVTT\n\n00:00:00.000 --> 00:00:00.500\n{text.strip()}\n"
    verbose = client.audio.transcriptions.create(
        model="ear", file=_clip(), **SHORT, response_format="verbose_json"
    )
    assert (verbose.text, verbose.duration) == (text, SECONDS)
    assert verbose.segments is not None
    [segment] = verbose.segments
    assert (segment.start, segment.end, segment.text) == (0.0, SECONDS, text)
    # A language joins the instruction, as llama-server words it, and the answer names it.
    english = client.audio.transcriptions.create(
        model="ear", file=_clip(), **SHORT, response_format="verbose_json", language="en"
    )
    assert english.language == "en"


def test_a_streamed_transcript_adds_up_to_the_whole(client: openai.OpenAI) -> None:
    whole = client.audio.transcriptions.create(model="ear", file=_clip(), **SHORT)
    events = list(
        client.audio.transcriptions.create(model="ear", file=_clip(), **SHORT, stream=True)
    )
    deltas = [event.delta for event in events if event.type == "transcript.text.delta"]
    [done] = [event for event in events if event.type == "transcript.text.done"]
    assert "".join(deltas) == done.text == whole.text


def test_a_model_without_an_audio_projector_is_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.audio.transcriptions.create(model="alpha", file=_clip())
    assert raised.value.body == {
        "code": 400,
        "message": "The current model does not support audio input: "
        "it has no audio projector (--mmproj)",
        "type": "invalid_request_error",
    }


def test_an_unknown_format_is_400_naming_the_field(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.audio.transcriptions.create(
            model="ear",
            file=_clip(),
            response_format="xml",  # type: ignore[call-overload]
        )
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["message"].startswith("Field 'response_format': 'xml' is not one of")


def test_a_file_that_is_no_audio_is_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.audio.transcriptions.create(model="ear", file=("cat.png", png_bytes()))
    assert isinstance(raised.value.body, dict)
    assert "image input is not supported" in raised.value.body["message"]


def test_too_large_an_upload_is_413(client: openai.OpenAI) -> None:
    big = io.BytesIO(wav_bytes(SECONDS) + bytes(MAX_AUDIO_UPLOAD))
    with pytest.raises(openai.APIStatusError) as raised:
        client.audio.transcriptions.create(model="alpha", file=("long.wav", big))
    assert raised.value.status_code == 413
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["message"].startswith("the upload is ")
