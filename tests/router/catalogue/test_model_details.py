"""A model's details from its GGUF header: family, parameters, quantization, digest."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from router.catalogue.catalogue import CatalogueEntry
from router.catalogue.model_details import human_parameters, model_details, model_header
from tests.support.files.tiny_gguf import write_tiny_gguf


def test_parameter_sizes_read_as_ollama_writes_them() -> None:
    assert human_parameters(8_030_261_248) == "8.0B"
    assert human_parameters(7_000_000_000) == "7B"
    assert human_parameters(134_515_008) == "134.52M"
    assert human_parameters(148_672) == "149K"
    assert human_parameters(12) == "12"


def test_details_come_from_the_header_and_a_blob_is_named_by_its_hash(tmp_path: Path) -> None:
    model = write_tiny_gguf(tmp_path / "tiny.gguf")
    details = model_details(CatalogueEntry("tiny", model, "models_dir"))
    assert (details.family, details.quantization) == ("llama", "F16")
    assert details.parameters == 148_672  # every tensor's elements
    assert details.size == model.stat().st_size
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    assert details.digest != digest  # a plain file is not hashed
    blob = tmp_path / f"sha256-{digest}"  # Ollama's blob store names files so
    model.rename(blob)
    assert model_details(CatalogueEntry("tiny", blob, "preset")).digest == digest


def test_a_file_gone_since_the_listing_reports_what_its_name_says(tmp_path: Path) -> None:
    """``/api/show`` and the listings read details of catalogue entries, which may have lost
    their file since the catalogue was read: an answer, never an error (a 500 before)."""
    model = write_tiny_gguf(tmp_path / "tiny-Q4_K_M.gguf")
    entry = CatalogueEntry("tiny", model, "models_dir")
    model.unlink()
    details = model_details(entry)
    assert (details.family, details.quantization, details.size) == ("", "Q4_K_M", 0)


def test_a_header_is_read_again_only_when_its_file_changes(tmp_path: Path) -> None:
    path = write_tiny_gguf(tmp_path / "m.gguf")
    first = model_header(path)
    assert first["general.architecture"] == "llama"
    assert model_header(path) is first  # kept
    write_tiny_gguf(path, pooling="mean")  # replaced: another size and time
    os.utime(path, ns=(1, 1))
    assert "llama.pooling_type" in model_header(path)
    assert model_header(tmp_path / "gone.gguf") == {}
