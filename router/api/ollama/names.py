"""Ollama's model names (``name:tag``, ``hf.co/org/repo:TAG``) and Corral's ids and aliases.

Ollama names a model ``name:tag``, ``latest`` when no tag is given, and a model pulled from the
Hugging Face hub ``hf.co/org/repo:TAG``. Corral's ids are file names (``alpha``) and hub cache
names (``org/repo:TAG``). Both ways are answered: ``alpha``, ``alpha:latest`` and
``hf.co/org/repo:Q4_K_M`` find their models, and listings show each model as Ollama would name it.
``/api/copy`` adds names of its own (:class:`Copies`), which only this API knows.
"""

from __future__ import annotations

from collections.abc import Iterator

from corral.hub.names import DEFAULT_TAGS
from router.catalogue.catalogue import Catalogue, CatalogueEntry

__all__ = ["Copies", "candidates", "hub_reference", "ollama_name", "resolve", "tagged"]

_HUB_HOSTS = ("hf.co/", "huggingface.co/")
_LATEST = ":latest"


def hub_reference(name: str) -> str:
    """``hf.co/org/repo:TAG`` → ``org/repo:TAG``; other names as they are."""
    for host in _HUB_HOSTS:
        if name.lower().startswith(host):
            return name[len(host) :]
    return name


def ollama_name(entry: CatalogueEntry, name: str | None = None) -> str:
    """How Ollama would name ``entry`` (or one of its names): hub models as ``hf.co/…``,
    names without a tag with ``:latest``."""
    name = name or entry.name
    if entry.source == "cache" and name == entry.name:
        return "hf.co/" + name
    return tagged(name)


def tagged(name: str) -> str:
    """A name with its tag: ``:latest`` when it has none."""
    return name if ":" in name.rpartition("/")[2] else name + _LATEST


class Copies:
    """``/api/copy``'s names: each leads to a catalogue name (kept while the router runs)."""

    def __init__(self) -> None:
        self._targets: dict[str, str] = {}

    def add(self, copy: str, target: str) -> None:
        self._targets[_bare(copy)] = target

    def remove(self, copy: str) -> bool:
        return self._targets.pop(_bare(copy), None) is not None

    def target(self, name: str) -> str | None:
        return self._targets.get(_bare(name))

    def of(self, target: str) -> Iterator[str]:
        return (copy for copy, to in self._targets.items() if to == target)

    def prune(self, catalogue: Catalogue) -> None:
        """Forget copies whose model has left the catalogue (removed, or gone on a reload)."""
        for copy, to in list(self._targets.items()):
            if catalogue.resolve(to) is None:
                del self._targets[copy]


def _bare(name: str) -> str:
    return name.removesuffix(_LATEST)


def candidates(name: str) -> tuple[str, ...]:
    """The names an Ollama name may stand for, in order: as given, without a hub host, without
    ``:latest``, without both."""
    return (name, hub_reference(name), _bare(name), _bare(hub_reference(name)))


def resolve(catalogue: Catalogue, copies: Copies, name: str) -> CatalogueEntry | None:
    """The model an Ollama name means: a Corral id or alias, with or without ``:latest`` or a
    hub host, or a copy's."""
    for candidate in candidates(name):
        entry = catalogue.resolve(candidate)
        if entry is not None:
            return entry
    target = copies.target(name)
    if target is not None:
        return catalogue.resolve(target)
    return _pulled_without_tag(catalogue, _bare(hub_reference(name)))


def _pulled_without_tag(catalogue: Catalogue, repo: str) -> CatalogueEntry | None:
    """``hf.co/org/repo`` (no tag): the quant a pull of it fetched, chosen as downloads
    choose (Q4_K_M, then Q8_0), else the repository's only one."""
    if "/" not in repo or ":" in repo:
        return None
    for tag in DEFAULT_TAGS:
        entry = catalogue.resolve(f"{repo}:{tag}")
        if entry is not None:
            return entry
    cached = [e for e in catalogue.entries.values() if e.name.startswith(repo + ":")]
    return cached[0] if len(cached) == 1 else None
