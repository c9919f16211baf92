"""Which kind of media a file is, from its first bytes.

libmtmd decodes images with stb_image and audio with miniaudio, and hands anything else to
ffprobe as a possible video; sniffing first keeps a malformed upload from spawning a process
and lets the error say what was wrong before any decoding starts.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["MediaKind", "media_kind"]

MediaKind = Literal["image", "audio"]

_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM")
_AUDIO_MAGIC = (b"ID3", b"fLaC", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2")


def media_kind(data: bytes) -> MediaKind | None:
    """``image`` (PNG, JPEG, GIF, BMP), ``audio`` (WAV, MP3, FLAC), or None for anything else."""
    if data.startswith(_IMAGE_MAGIC):
        return "image"
    if data.startswith(_AUDIO_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WAVE"):
        return "audio"
    return None
