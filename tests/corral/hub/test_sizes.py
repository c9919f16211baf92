"""How much disk a cached model takes: every shard and its projector."""

from __future__ import annotations

from pathlib import Path

from corral.hub.sizes import cached_model_sizes
from tests.support.files.hub_cache import REPO, lay_out


def test_sizes_count_every_shard_and_the_projector(tmp_path: Path) -> None:
    shards = {f"m-Q8_0-0000{i}-of-00002.gguf": b"x" * (100 * i) for i in (1, 2)}
    lay_out(tmp_path, {**shards, "mmproj-F16.gguf": b"p" * 50, "m-Q4_0.gguf": b"y" * 7})
    sizes = {item.model.name: item.size for item in cached_model_sizes(tmp_path)}
    assert sizes == {f"{REPO}:Q4_0": 7 + 50, f"{REPO}:Q8_0": 100 + 200 + 50}
