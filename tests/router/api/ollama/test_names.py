"""Ollama's names (``name:tag``, ``hf.co/org/repo:TAG``) find Corral's models, and listings
name Corral's models as Ollama would."""

from __future__ import annotations

from pathlib import Path

from router.api.ollama.names import Copies, ollama_name, resolve
from router.catalogue.catalogue import Catalogue, CatalogueEntry

_ALPHA = CatalogueEntry("alpha", Path("/m/alpha.gguf"), "models_dir", aliases=("first",))
_HUB = CatalogueEntry("acme/tiny-GGUF:Q8_0", Path("/c/tiny-Q8_0.gguf"), "cache")
_CATALOGUE = Catalogue({entry.name: entry for entry in (_ALPHA, _HUB)})


def test_names_with_and_without_tags_hosts_and_aliases_resolve() -> None:
    copies = Copies()
    for name in ("alpha", "alpha:latest", "first:latest"):
        assert resolve(_CATALOGUE, copies, name) is _ALPHA
    for name in ("acme/tiny-GGUF:Q8_0", "hf.co/acme/tiny-GGUF:Q8_0", "hf.co/acme/tiny-GGUF:q8_0"):
        assert resolve(_CATALOGUE, copies, name) is _HUB
    # No tag: the quant a pull of the repository fetched (its only one here).
    assert resolve(_CATALOGUE, copies, "hf.co/acme/tiny-GGUF") is _HUB
    assert resolve(_CATALOGUE, copies, "hf.co/acme/tiny-GGUF:latest") is _HUB
    assert resolve(_CATALOGUE, copies, "alpha:7b") is None
    assert resolve(_CATALOGUE, copies, "hf.co/acme/other:Q8_0") is None


def test_listings_name_models_as_ollama_does() -> None:
    assert ollama_name(_ALPHA) == "alpha:latest"
    assert ollama_name(_ALPHA, "first") == "first:latest"
    assert ollama_name(_HUB) == "hf.co/acme/tiny-GGUF:Q8_0"


def test_a_copy_resolves_until_removed_or_its_model_leaves() -> None:
    copies = Copies()
    copies.add("backup:latest", "alpha")
    assert resolve(_CATALOGUE, copies, "backup") is _ALPHA
    assert list(copies.of("alpha")) == ["backup"]
    assert copies.remove("backup:latest")
    assert resolve(_CATALOGUE, copies, "backup") is None
    copies.add("gone", "beta")
    copies.prune(_CATALOGUE)
    assert copies.target("gone") is None
