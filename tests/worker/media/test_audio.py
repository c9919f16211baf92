"""Audio through a real projector: OpenAI ``input_audio`` parts and ``multimodal_data`` WAVs
reach a tiny random-weight Whisper-style encoder paired with the tiny model."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_media import png_bytes, wav_bytes
from tests.support.files.tiny_mmproj import AUDIO_TOKENS, write_tiny_audio_mmproj
from tests.support.worker_process import WorkerProcess, worker

MARKER = "<__media__>"


@pytest.fixture(scope="module")
def listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    folder = tmp_path_factory.mktemp("audio")
    model = write_tiny_gguf(folder / "ear.gguf", name="ear", attention_gain=10.0)
    mmproj = write_tiny_audio_mmproj(folder / "mmproj-ear.gguf")
    # A clip costs 750 tokens: the context and the batch are sized for one.
    args = ("--mmproj", str(mmproj), "--ctx-size", "2048", "--batch-size", "1024")
    with worker(model, *args, env={"LLAMA_MEDIA_MARKER": MARKER}) as child:
        yield child


def _chat(child: WorkerProcess, *parts: dict[str, Any]) -> httpx.Response:
    content = [{"type": "text", "text": "What is this:"}, *parts]
    body = {
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 6,
        "temperature": 0,
    }
    return httpx.post(f"{child.url}/v1/chat/completions", json=body, timeout=120)


def _audio_part(data: bytes) -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    return {"type": "input_audio", "input_audio": {"data": encoded, "format": "wav"}}


def test_props_report_audio(listener: WorkerProcess) -> None:
    props = httpx.get(f"{listener.url}/props").json()
    assert props["modalities"] == {"vision": False, "video": False, "audio": True}


def test_an_input_audio_part_is_heard(listener: WorkerProcess) -> None:
    plain = _chat(listener).json()
    heard = _chat(listener, _audio_part(wav_bytes())).json()
    # The clip's embeddings, and the text of the start and end markers the projector adds.
    extra = heard["usage"]["prompt_tokens"] - plain["usage"]["prompt_tokens"]
    assert AUDIO_TOKENS < extra < AUDIO_TOKENS + 40
    assert heard["choices"][0]["message"]["content"] != plain["choices"][0]["message"]["content"]
    again = _chat(listener, _audio_part(wav_bytes())).json()
    assert again["choices"][0]["message"] == heard["choices"][0]["message"]


def test_multimodal_data_takes_audio(listener: WorkerProcess) -> None:
    clip = base64.b64encode(wav_bytes()).decode()
    body = {
        "prompt": {"prompt_string": f"Listen: {MARKER} now", "multimodal_data": [clip]},
        "n_predict": 4,
        "temperature": 0,
    }
    reply = httpx.post(f"{listener.url}/completion", json=body, timeout=120)
    assert reply.status_code == 200, reply.text
    assert reply.json()["tokens_evaluated"] > AUDIO_TOKENS


def test_an_image_to_an_audio_projector_is_400(listener: WorkerProcess) -> None:
    uri = "data:image/png;base64," + base64.b64encode(png_bytes()).decode()
    reply = _chat(listener, {"type": "image_url", "image_url": {"url": uri}})
    assert reply.status_code == 400
    assert reply.json()["error"]["message"].startswith(
        "messages[0].content[1].image_url: image input is not supported"
    )


def test_unreadable_audio_is_400(listener: WorkerProcess) -> None:
    reply = _chat(listener, _audio_part(b"RIFF\x00\x00\x00\x00WAVEnot really"))
    assert reply.status_code == 400
    assert reply.json()["error"]["message"] == (
        "messages[0].content[1].input_audio: failed to load the image or audio file"
    )


def test_a_transcription_upload_is_heard_by_the_worker_alone(listener: WorkerProcess) -> None:
    """The worker answers the multipart route itself, as llama-server (docs/api.md)."""
    form = {"model": "ear", "max_tokens": "4", "temperature": "0"}
    files = {"file": ("clip.wav", wav_bytes(), "audio/wav")}
    url = f"{listener.url}/v1/audio/transcriptions"
    reply = httpx.post(url, data=form, files=files, timeout=120)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["type"] == "transcript.text.done"
    assert body["usage"]["input_tokens"] > AUDIO_TOKENS
    assert body["usage"]["output_tokens"] == 4
    text = httpx.post(url, data={**form, "response_format": "text"}, files=files, timeout=120)
    assert text.headers["content-type"].startswith("text/plain")
    assert text.text == body["text"]
