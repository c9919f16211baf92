"""Media parts out of requests, a marker in their place (as llama-server's
``oaicompat_content_load_media``).

OpenAI ``image_url`` and ``input_audio`` content parts become a text part holding the media
marker, so any chat template renders them where they stood; the bytes are read (fetched, for
URLs) here, on the event loop, before the engine thread sees the prompt. The parts are counted
before any is read, and their bytes add up against one budget per request
(:mod:`worker.media.rules`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from worker.host.errors import InvalidInput
from worker.media.formats import MediaKind, media_kind
from worker.media.rules import MediaBudget, MediaRules
from worker.media.sources import decode_base64, read_media

__all__ = ["MediaFile", "Modalities", "take_message_media", "take_prompt_media"]

_PART_KINDS: dict[str, MediaKind] = {"image_url": "image", "input_audio": "audio"}
_NO_PROJECTOR_HINT = "hint: if this is unexpected, you may need to provide the mmproj"


@dataclass(frozen=True, slots=True)
class Modalities:
    """What the loaded projector reads; both false without one."""

    vision: bool = False
    audio: bool = False

    def allows(self, kind: MediaKind) -> bool:
        return self.vision if kind == "image" else self.audio


class MediaFile(NamedTuple):
    data: bytes
    field: str  # where the request gave it, for error messages


def _unsupported(field: str, kind: MediaKind) -> InvalidInput:
    return InvalidInput(f"{field}: {kind} input is not supported - {_NO_PROJECTOR_HINT}")


def _checked(data: bytes, field: str, modalities: Modalities) -> MediaFile:
    kind = media_kind(data)
    if kind is None:
        raise InvalidInput(f"{field}: not a supported image (PNG, JPEG, GIF, BMP) or audio file")
    if not modalities.allows(kind):
        raise _unsupported(field, kind)
    return MediaFile(data, field)


def _part_url(part: dict[str, Any], key: str) -> str:
    value = part.get(key)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        url = value.get("data", value.get("url", ""))
        return url if isinstance(url, str) else ""
    return ""


def _media_kind(part: Any) -> MediaKind | None:
    return _PART_KINDS.get(part.get("type", "")) if isinstance(part, dict) else None


def _count_parts(messages: list[dict[str, Any]]) -> int:
    return sum(
        _media_kind(part) is not None
        for message in messages
        if isinstance(content := message.get("content"), list)
        for part in content
    )


async def take_message_media(
    messages: list[dict[str, Any]],
    modalities: Modalities,
    marker: str,
    rules: MediaRules,
) -> tuple[list[dict[str, Any]], list[MediaFile]]:
    """The messages with each media part replaced by a marker text part, and the media in
    order; 400 naming the part for media the model cannot read, and for more parts or bytes
    than ``rules`` allow a request (counted before anything is read). ``file://`` URLs are read
    from ``rules.media_path`` (``--media-path``), and refused without it."""
    rules.check_parts(_count_parts(messages), "messages")
    budget = MediaBudget(rules.max_bytes)
    files: list[MediaFile] = []
    result: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            result.append(message)
            continue
        parts: list[Any] = []
        for j, part in enumerate(content):
            kind = _media_kind(part)
            if kind is None:
                parts.append(part)
                continue
            field = f"messages[{i}].content[{j}].{part['type']}"
            if not modalities.allows(kind):
                raise _unsupported(field, kind)
            url = _part_url(part, part["type"])
            data = await read_media(url, field, budget, rules)
            files.append(_checked(data, field, modalities))
            parts.append({"type": "text", "text": marker})
        result.append({**message, "content": parts})
    return result, files


def take_prompt_media(
    data: list[str], modalities: Modalities, rules: MediaRules
) -> list[MediaFile]:
    """``/completion``'s ``multimodal_data``: base64 files, one per marker in the prompt, as
    many and as large as ``rules`` allow a request."""
    if not (modalities.vision or modalities.audio):
        raise InvalidInput(
            "prompt.multimodal_data: multimodal data provided, but the model does not support "
            f"multimodal requests - {_NO_PROJECTOR_HINT}",
        )
    rules.check_parts(len(data), "prompt.multimodal_data")
    budget = MediaBudget(rules.max_bytes)
    files = []
    for i, entry in enumerate(data):
        field = f"prompt.multimodal_data[{i}]"
        if entry.startswith(("http://", "https://", "data:")):  # base64 only, as upstream
            raise InvalidInput(f"{field}: expected base64 data")
        decoded = budget.spend(decode_base64(entry, field), field)
        files.append(_checked(decoded, field, modalities))
    return files
