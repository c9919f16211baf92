"""Which models exist: ``--models-dir`` and ``-m`` files (SPEC §2).

The hub cache and presets join this list in later work; every source yields the same
:class:`CatalogueEntry`, so the registry does not care where a model came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["CatalogueEntry", "CatalogueError", "scan_catalogue"]

Source = Literal["models_dir", "cache", "preset"]
_SIDECAR_MARKERS = ("mmproj", "draft")


class CatalogueError(Exception):
    """The model sources are inconsistent (e.g. two models with one name)."""


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    name: str
    path: Path
    source: Source


def _is_main_model(path: Path) -> bool:
    stem = path.stem.lower()
    if any(marker in stem for marker in _SIDECAR_MARKERS):
        return False
    # Split models: only the first shard ("-00001-of-00003") names the model.
    parts = stem.rsplit("-", 3)
    return not (len(parts) == 4 and parts[2] == "of" and parts[1].isdigit() and int(parts[1]) > 1)


def _scan_models_dir(models_dir: Path) -> list[CatalogueEntry]:
    entries: list[CatalogueEntry] = []
    for child in sorted(models_dir.iterdir()):
        if child.is_file() and child.suffix == ".gguf" and _is_main_model(child):
            entries.append(CatalogueEntry(child.stem, child, "models_dir"))
        elif child.is_dir():
            shards = sorted(p for p in child.glob("*.gguf") if _is_main_model(p))
            if shards:
                entries.append(CatalogueEntry(child.name, shards[0], "models_dir"))
    return entries


def scan_catalogue(models_dir: Path | None, model_files: list[Path]) -> dict[str, CatalogueEntry]:
    """Every model by name; ``-m`` files are named by their stem, like directory models."""
    found = _scan_models_dir(models_dir) if models_dir is not None else []
    found += [CatalogueEntry(path.stem, path.resolve(), "models_dir") for path in model_files]
    catalogue: dict[str, CatalogueEntry] = {}
    for entry in found:
        other = catalogue.get(entry.name)
        if other is not None and other.path.resolve() != entry.path.resolve():
            raise CatalogueError(
                f"model '{entry.name}' appears twice: {other.path} and {entry.path}"
            )
        catalogue[entry.name] = entry
    return catalogue
