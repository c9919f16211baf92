"""What a model reads besides text, from its projector's header (no projector loaded)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from corral.hub.gguf_header import read_gguf_metadata

__all__ = ["input_modalities"]


def input_modalities(mmproj: Path | None) -> list[str]:
    """What a model with this projector reads, as upstream's router lists it in ``/models``
    (``architecture.input_modalities``): ``text``, then ``image`` and ``audio`` as the
    projector's header says. An unreadable projector adds nothing (its load will say why)."""
    if mmproj is None:
        return ["text"]
    try:
        stat = mmproj.stat()
    except OSError:
        return ["text"]
    return ["text", *_projector_inputs(mmproj, stat.st_mtime_ns, stat.st_size)]


@lru_cache(maxsize=64)
def _projector_inputs(mmproj: Path, mtime_ns: int, size: int) -> tuple[str, ...]:
    # Keyed by mtime and size too: a projector replaced on disk is read again.
    try:
        header = read_gguf_metadata(mmproj)
    except Exception:  # a bad projector must not fail a listing
        return ()  # its model is listed with the projector's problem (router/catalogue)
    kinds = (("clip.has_vision_encoder", "image"), ("clip.has_audio_encoder", "audio"))
    return tuple(kind for key, kind in kinds if header.get(key) is True)
