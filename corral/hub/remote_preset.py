"""Remote presets: a hub repository with a root ``preset.ini`` is a preset, not a model.

llama-server's ``-hf org/repo`` fetches only that file from such a repository and serves it as
``--models-preset`` in router mode (``common/download.cpp``: the file wins over any GGUF in the
repository). The download child and the router share these rules (docs/serving.md). The file is
a stranger's: the router lets it set only upstream's whitelist of keys and no peers
(router/catalogue/remote_presets.py, docs/security.md).
"""

from __future__ import annotations

from pathlib import Path

from corral.hub.cache_layout import current_snapshot, repo_folder_name

__all__ = ["PRESET_FILE", "PRESET_TAG", "cached_preset"]

PRESET_FILE = "preset.ini"
PRESET_TAG = "preset"  # what a preset's download is named after: ``org/repo:preset``


def cached_preset(cache_dir: Path, repo: str) -> Path | None:
    """The cached ``preset.ini`` of ``repo``'s current snapshot, if it has one."""
    snapshot = current_snapshot(cache_dir / repo_folder_name(repo))
    if snapshot is None:
        return None
    preset = snapshot / PRESET_FILE
    return preset if preset.is_file() else None
