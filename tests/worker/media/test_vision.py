"""Images through a real projector: a tiny random-weight mmproj paired with the tiny model,
driven over HTTP with the official client, as llama-server's test_vision_api.py drives it."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_media import png_bytes, wav_bytes
from tests.support.files.tiny_mmproj import IMAGE_TOKENS, write_tiny_mmproj
from tests.support.worker_process import WorkerProcess, worker

MARKER = "<__media__>"


def _uri(data: bytes, kind: str = "image/png") -> str:
    return f"data:{kind};base64," + base64.b64encode(data).decode()


def _write_seer(folder: Path) -> tuple[Path, Path]:
    # A gain that lets earlier context reach the logits, so an image changes the answer.
    model = write_tiny_gguf(folder / "seer.gguf", name="seer", attention_gain=10.0)
    return model, write_tiny_mmproj(folder / "mmproj-seer.gguf")


@pytest.fixture(scope="module")
def vision(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    model, mmproj = _write_seer(tmp_path_factory.mktemp("vision"))
    # One slot, so that every request meets the cache the one before it left.
    with worker(model, "--mmproj", str(mmproj), env={"LLAMA_MEDIA_MARKER": MARKER}) as child:
        yield child


@pytest.fixture(scope="module")
def client(vision: WorkerProcess) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{vision.url}/v1", api_key="none", timeout=120) as client:
        yield client


def _ask(
    client: openai.OpenAI, *images: bytes, text: str = "What is this:", blanks: int = 0
) -> Any:
    # Parts are joined with newlines as llama.cpp does; ``blanks`` empty parts give a text-only
    # prompt laid out as one with that many images, so token counts differ by the images alone.
    content: list[Any] = [{"type": "text", "text": text}]
    content += [{"type": "text", "text": ""}] * blanks
    content += [{"type": "image_url", "image_url": {"url": _uri(image)}} for image in images]
    return client.chat.completions.create(
        model="seer",
        messages=[{"role": "user", "content": content}],
        temperature=0,
        max_tokens=8,
    )


def test_props_report_vision_and_the_marker(vision: WorkerProcess) -> None:
    props = httpx.get(f"{vision.url}/props").json()
    assert props["modalities"] == {"vision": True, "video": False, "audio": False}
    assert props["media_marker"] == MARKER


def test_an_image_is_counted_and_changes_the_answer(client: openai.OpenAI) -> None:
    plain = _ask(client, blanks=1)
    first = _ask(client, png_bytes(seed=1))
    again = _ask(client, png_bytes(seed=1))
    other = _ask(client, png_bytes(seed=2))
    assert first.usage.prompt_tokens == plain.usage.prompt_tokens + IMAGE_TOKENS
    assert first.choices[0].message.content == again.choices[0].message.content
    assert first.choices[0].message.content != plain.choices[0].message.content
    assert first.choices[0].message.content != other.choices[0].message.content


def test_two_images_and_a_streamed_answer(client: openai.OpenAI) -> None:
    plain = _ask(client, blanks=2)
    two = _ask(client, png_bytes(seed=1), png_bytes(40, 24, seed=3))
    # The newline between the images is a text chunk of its own, and llama.cpp's SPM
    # tokenizer gives every chunk a space prefix: one token more than the blank parts.
    assert two.usage.prompt_tokens == plain.usage.prompt_tokens + 2 * IMAGE_TOKENS + 1
    stream = client.chat.completions.create(
        model="seer",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this:"},
                    {"type": "image_url", "image_url": {"url": _uri(png_bytes(seed=1))}},
                ],
            }
        ],
        temperature=0,
        max_tokens=8,
        stream=True,
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == _ask(client, png_bytes(seed=1)).choices[0].message.content


def test_text_after_an_image_turn_reuses_nothing_past_the_image(client: openai.OpenAI) -> None:
    # The slot's cache holds the image; a text-only prompt that starts the same way must not
    # be answered from it (the image's positions match no text token).
    with_image = _ask(client, png_bytes(seed=4))
    plain = _ask(client)
    assert plain.choices[0].message.content == _ask(client).choices[0].message.content
    assert with_image.choices[0].message.content != plain.choices[0].message.content


def test_concurrent_image_requests_match_one_at_a_time(
    client: openai.OpenAI, tmp_path: Path
) -> None:
    images = [png_bytes(seed=seed) for seed in (5, 6, 7)]
    alone = [_ask(client, image).choices[0].message.content for image in images]
    model, mmproj = _write_seer(tmp_path)
    with (
        worker(model, "--mmproj", str(mmproj), "--parallel", "2") as child,
        openai.OpenAI(base_url=f"{child.url}/v1", api_key="none", timeout=120) as other,
        ThreadPoolExecutor(3) as pool,
    ):
        together = list(pool.map(lambda image: _ask(other, image), images))
    assert [reply.choices[0].message.content for reply in together] == alone


def _count(child: WorkerProcess, text: str, *, add_special: bool) -> int:
    body = {"content": text, "add_special": add_special}
    return len(httpx.post(f"{child.url}/tokenize", json=body).json()["tokens"])


def test_completion_with_multimodal_data(vision: WorkerProcess) -> None:
    image = base64.b64encode(png_bytes(seed=1)).decode()
    body: dict[str, Any] = {
        "prompt": {"prompt_string": f"What is this: {MARKER}\n", "multimodal_data": [image]},
        "temperature": 0,
        "n_predict": 8,
    }
    with_image = httpx.post(f"{vision.url}/completion", json=body, timeout=120).json()
    body["prompt"] = {"prompt_string": "What is this: \n"}
    without = httpx.post(f"{vision.url}/completion", json=body, timeout=120).json()
    body["prompt"] = {"prompt_string": "What is this: \n", "multimodal_data": []}
    no_media = httpx.post(f"{vision.url}/completion", json=body, timeout=120).json()
    assert no_media["content"] == without["content"]
    # The text on each side of the marker is tokenized apart, as llama-server does.
    text_tokens = _count(vision, "What is this: ", add_special=True)
    text_tokens += _count(vision, "\n", add_special=False)
    assert with_image["tokens_evaluated"] == text_tokens + IMAGE_TOKENS
    assert with_image["content"] != without["content"]


@pytest.mark.parametrize(
    ("url", "wanted"),
    [
        ("malformed", "invalid base64"),
        ("data:text/html;base64,aGVsbG8=", "unsupported data URI type"),
        ("data:image/png;base64,aGVsbG8=", "not a supported image"),
        ("file:///etc/passwd", "file:// URLs are not allowed"),
        ("", "no media given"),
    ],
)
def test_bad_images_are_400_naming_the_part(vision: WorkerProcess, url: str, wanted: str) -> None:
    body = {
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is this:"},
                {"type": "image_url", "image_url": {"url": url}},
            ]},
        ],
        "max_tokens": 4,
    }  # fmt: skip
    response = httpx.post(f"{vision.url}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert message.startswith("messages[0].content[1].image_url: ")
    assert wanted in message


def test_audio_to_a_vision_only_projector_is_400(vision: WorkerProcess) -> None:
    audio = base64.b64encode(wav_bytes()).decode()
    part = {"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}}
    body = {"messages": [{"role": "user", "content": [part]}], "max_tokens": 4}
    response = httpx.post(f"{vision.url}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 400
    assert (
        "messages[0].content[0].input_audio: audio input is not supported"
        in (response.json()["error"]["message"])
    )


@pytest.mark.parametrize(
    ("prompt", "data", "wanted"),
    [
        ("What is this:\n", [base64.b64encode(png_bytes()).decode()], "0 media markers"),
        (f"What is this: {MARKER}\n", ["bWFsZm9ybWVk"], "not a supported image"),
        (f"What is this: {MARKER}\n", [""], "the media data is empty"),
        (f"What is this: {MARKER}", [base64.b64encode(png_bytes()).decode()], "must not end"),
    ],
)
def test_bad_multimodal_data_is_400(
    vision: WorkerProcess, prompt: str, data: list[str], wanted: str
) -> None:
    body = {"prompt": {"prompt_string": prompt, "multimodal_data": data}, "n_predict": 4}
    response = httpx.post(f"{vision.url}/completion", json=body, timeout=60)
    assert response.status_code == 400
    assert wanted in response.json()["error"]["message"]


def test_media_to_a_text_only_model_is_400(models_dir: Path) -> None:
    image = png_bytes()
    with worker(models_dir / "alpha.gguf") as child:
        assert httpx.get(f"{child.url}/props").json()["modalities"] == {
            "vision": False,
            "video": False,
            "audio": False,
        }
        body = {
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": _uri(image)}},
            ]}],
        }  # fmt: skip
        response = httpx.post(f"{child.url}/v1/chat/completions", json=body, timeout=60)
        assert response.status_code == 400
        assert response.json()["error"]["message"] == (
            "messages[0].content[0].image_url: image input is not supported - hint: if this is "
            "unexpected, you may need to provide the mmproj"
        )
        prompt = {"prompt_string": "x", "multimodal_data": [base64.b64encode(image).decode()]}
        response = httpx.post(f"{child.url}/completion", json={"prompt": prompt}, timeout=60)
        assert response.status_code == 400
        assert "does not support multimodal requests" in response.json()["error"]["message"]


def test_anthropic_image_blocks_read_as_image_parts(vision: WorkerProcess) -> None:
    def ask(*blocks: dict[str, Any]) -> Any:
        content = [{"type": "text", "text": "What is this:"}, *blocks]
        body = {
            "model": "seer",
            "max_tokens": 8,
            "temperature": 0,
            "messages": [{"role": "user", "content": content}],
        }
        response = httpx.post(f"{vision.url}/v1/messages", json=body, timeout=120)
        assert response.status_code == 200, response.text
        return response.json()

    data = base64.b64encode(png_bytes(seed=1)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    plain, with_image = ask(), ask(image)
    # Text blocks alone become one string; with an image the parts are joined by a newline,
    # as llama.cpp joins them: one token besides the image's.
    # The whole prompt is the uncached part and the cached one (docs/api.md).
    prompts = [
        sum(a["usage"][k] for k in ("input_tokens", "cache_read_input_tokens"))
        for a in (plain, with_image)
    ]
    assert prompts[1] == prompts[0] + IMAGE_TOKENS + 1
    assert with_image["content"] != plain["content"]
    counted = httpx.post(
        f"{vision.url}/v1/messages/count_tokens",
        json={"model": "seer", "messages": [{"role": "user", "content": [image]}]},
        timeout=60,
    ).json()
    text_only = httpx.post(
        f"{vision.url}/v1/messages/count_tokens",
        json={"model": "seer", "messages": [{"role": "user", "content": ""}]},
        timeout=60,
    ).json()
    assert counted["input_tokens"] == text_only["input_tokens"] + IMAGE_TOKENS
    bad = {"type": "image", "source": {"type": "url", "url": "file:///etc/passwd"}}
    body = {"model": "seer", "max_tokens": 8, "messages": [{"role": "user", "content": [bad]}]}
    response = httpx.post(f"{vision.url}/v1/messages", json=body, timeout=60)
    assert response.status_code == 400
    assert "messages[0].content[0].image_url" in response.json()["error"]["message"]


def test_responses_input_image_parts(client: openai.OpenAI) -> None:
    def ask(*images: bytes) -> Any:
        content: list[Any] = [{"type": "input_text", "text": "What is this:"}]
        content += [{"type": "input_image", "image_url": _uri(image)} for image in images]
        return client.responses.create(
            model="seer",
            input=[{"role": "user", "content": content}],
            temperature=0,
            max_output_tokens=8,
        )

    plain, with_image = ask(), ask(png_bytes(seed=1))
    assert with_image.usage is not None
    assert plain.usage is not None
    # Text parts alone become one string; with an image the parts are joined by a newline.
    assert with_image.usage.input_tokens == plain.usage.input_tokens + IMAGE_TOKENS + 1
    assert with_image.output_text != plain.output_text


def test_the_projector_sleeps_and_wakes_with_the_model(tmp_path: Path) -> None:
    model, mmproj = _write_seer(tmp_path)
    picture = png_bytes(seed=8)
    with (
        worker(model, "--mmproj", str(mmproj), "--sleep-idle-seconds", "1") as child,
        openai.OpenAI(base_url=f"{child.url}/v1", api_key="none", timeout=120) as client,
    ):
        before = _ask(client, picture)
        child.read_until("sleeping")
        # /props is answered asleep: the projector's modalities outlive its context.
        assert httpx.get(f"{child.url}/props").json()["modalities"]["vision"] is True
        after = _ask(client, picture)
        child.read_until("ready")
    assert after.choices[0].message.content == before.choices[0].message.content
    assert after.usage.prompt_tokens == before.usage.prompt_tokens


def test_a_prompt_with_media_stops_at_the_context_end_even_with_context_shift(
    tmp_path: Path,
) -> None:
    # As llama-server, which turns context shift off with an mmproj: media positions stay put.
    model, mmproj = _write_seer(tmp_path)
    image = base64.b64encode(png_bytes(seed=1)).decode()
    shift = ("--context-shift", "--parallel", "1", "--ctx-size", "256")
    with worker(
        model, "--mmproj", str(mmproj), *shift, env={"LLAMA_MEDIA_MARKER": MARKER}
    ) as child:
        body: dict[str, Any] = {"temperature": 0, "n_predict": 400, "ignore_eos": True}
        prompt = {"prompt_string": f"What is this: {MARKER}\n", "multimodal_data": [image]}
        url = f"{child.url}/completion"
        with_image = httpx.post(url, json={**body, "prompt": prompt}, timeout=120).json()
        text = httpx.post(url, json={**body, "prompt": "What is this:"}, timeout=120).json()
    assert with_image["truncated"] is True
    assert with_image["tokens_evaluated"] + with_image["tokens_predicted"] <= 256
    assert text["tokens_predicted"] == 400  # the same worker shifts a text prompt
