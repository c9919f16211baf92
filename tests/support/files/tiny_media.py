"""Small media files made in the tests: PNG images and WAV sounds, written without imaging
libraries so that their bytes are exactly what a test asks for."""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["png_bytes", "wav_bytes"]


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png_bytes(width: int = 32, height: int = 32, *, seed: int = 0) -> bytes:
    """An RGB PNG of random pixels; each seed is another picture."""
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))  # filter 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(rows))
        + _png_chunk(b"IEND", b"")
    )


def wav_bytes(seconds: float = 0.5, rate: int = 16000) -> bytes:
    """A mono 16-bit WAV of a 440 Hz tone."""
    t = np.arange(int(seconds * rate)) / rate
    samples = (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body
