"""Where a model's draft comes from: ``model-draft`` files and ``spec-draft-hf`` repositories.

Workers get one absolute ``--model-draft`` path. A relative ``model-draft`` is relative to the
INI file that wrote it (to the working directory on the command line), as the ``model`` key is;
``spec-draft-hf`` is looked up in the hub cache with ``model-draft``, if given, naming the file
inside the repository, as llama-server reads the pair. A draft that is not there stops the
catalogue, as a missing ``model`` or ``hf-repo`` does (docs/serving.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from corral.hub.cache_scan import CachedModel, resolve_cached_model

__all__ = ["DraftError", "absolute_draft", "cached_draft"]


class DraftError(ValueError):
    """A draft model that does not exist; the message says where it was named."""


def absolute_draft(options: Mapping[str, str], base: Path, where: str) -> dict[str, str]:
    """``options`` with ``model-draft`` made absolute against ``base`` and checked to exist."""
    draft = options.get("model-draft")
    if draft is None or "spec-draft-hf" in options:  # then it names a file of that repository
        return dict(options)
    path = (base / Path(draft).expanduser()).absolute()
    if not path.is_file():
        raise DraftError(f"{where}: key 'model-draft': no such file: {path}")
    return {**options, "model-draft": str(path)}


def cached_draft(
    options: Mapping[str, str], cached: Iterable[CachedModel], where: str
) -> dict[str, str]:
    """``options`` with ``spec-draft-hf`` replaced by the ``model-draft`` file it names."""
    repo = options.get("spec-draft-hf")
    if repo is None:
        return dict(options)
    found = resolve_cached_model(cached, repo, options.get("model-draft"))
    if found is None:
        raise DraftError(
            f"{where}: key 'spec-draft-hf': '{repo}' is not in the hub cache"
            " (download it first, e.g. with POST /models)"
        )
    kept = {key: value for key, value in options.items() if key != "spec-draft-hf"}
    return {**kept, "model-draft": str(found.path)}
