"""Which multimodal projector goes with a model."""

from __future__ import annotations

from pathlib import PurePosixPath

from corral.hub.mmproj import best_mmproj


def test_projector_is_the_nearest_then_the_closest_quantisation() -> None:
    paths = [
        PurePosixPath(p)
        for p in ("mmproj-F16.gguf", "sub/mmproj-F32.gguf", "sub/mmproj-Q8_0.gguf", "x/mmproj.gguf")
    ]
    assert best_mmproj(PurePosixPath("sub/m-Q8_0.gguf"), "Q8_0", paths) == PurePosixPath(
        "sub/mmproj-Q8_0.gguf"
    )
    assert best_mmproj(PurePosixPath("m-Q4_K_M.gguf"), "Q4_K_M", paths) == PurePosixPath(
        "mmproj-F16.gguf"
    )
    assert best_mmproj(PurePosixPath("m-Q4_K_M.gguf"), "Q4_K_M", paths[1:]) is None
