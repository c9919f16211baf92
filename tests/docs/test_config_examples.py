"""config/models.example.ini and config/corral.env: complete, and valid for Corral's own code."""

from __future__ import annotations

import re
from pathlib import Path

from corral.options.table import OPTIONS
from router.catalogue.catalogue import CatalogueSources, build_catalogue
from router.catalogue.presets import load_preset_file
from tests.support.files.tiny_gguf import write_tiny_gguf

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "models.example.ini"
ENV_FILE = ROOT / "config" / "corral.env"
MODELS = "/var/lib/corral/models/"
MEDIA = "/var/lib/corral/media"  # a folder: the catalogue checks media-path is one


def test_example_sets_every_preset_key() -> None:
    preset = load_preset_file(EXAMPLE)  # Corral's parser: raises on any unknown key or bad value
    used = set(preset.defaults)
    for section in preset.sections.values():
        used |= set(section.options)
    missing = sorted({spec.name for spec in OPTIONS} - used)
    assert not missing, f"config/models.example.ini sets no value for: {missing}"


def _fake_hub(root: Path) -> Path:
    repo = root / "hub" / "models--ggml-org--gemma-3-1b-it-GGUF"
    snapshot = repo / "snapshots" / ("c" * 40)
    snapshot.mkdir(parents=True)
    for tag in ("Q4_K_M", "Q8_0"):
        write_tiny_gguf(snapshot / f"gemma-3-1b-it-{tag}.gguf", name="gemma")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("c" * 40, encoding="utf-8")
    return root / "hub"


def test_example_builds_a_catalogue_once_its_files_exist(tmp_path: Path) -> None:
    models = tmp_path / "models"
    text = EXAMPLE.read_text(encoding="utf-8")
    for relative in re.findall(rf"= {re.escape(MODELS)}(\S+)", text):
        (models / relative).parent.mkdir(parents=True, exist_ok=True)
        write_tiny_gguf(models / relative, name=Path(relative).stem)
    write_tiny_gguf(models / "SmolLM2-135M-Instruct.Q4_1.gguf", name="smol")
    preset = tmp_path / "models.ini"
    (tmp_path / "media").mkdir()
    text = text.replace(MODELS, f"{models}/").replace(MEDIA, str(tmp_path / "media"))
    preset.write_text(text, encoding="utf-8")

    catalogue = build_catalogue(
        CatalogueSources(models_dir=models, preset_file=preset, cache_dir=_fake_hub(tmp_path))
    )
    entries = catalogue.entries
    smol = entries["SmolLM2-135M-Instruct.Q4_1"]
    assert smol.aliases == ("default", "smol")
    assert (smol.ttl, smol.pin) == (600.0, True)
    assert ("temp", "0.3") in smol.options
    assert ("ctx-size", "8192") in smol.options  # from [*]
    coder = entries["coder"]
    assert coder.load_on_startup
    assert coder.stop_timeout == 30.0
    assert ("ctx-size", "32768") in coder.options  # the section beats [*]
    assert entries["gemma"].path.name == "gemma-3-1b-it-Q4_K_M.gguf"
    assert entries["ggml-org/gemma-3-1b-it-GGUF:Q4_K_M"].hidden  # dedup-cache-models
    assert entries["gemma-q8"].path.name == "gemma-3-1b-it-Q8_0.gguf"
    gemma_draft = dict(entries["gemma-q8"].options)["model-draft"]
    assert gemma_draft == str(entries["gemma"].path)  # spec-draft-hf, found in the cache
    assert "--model-draft" in coder.worker_args()
    assert entries["llava"].mmproj is not None
    assert ("media-path", str(tmp_path / "media")) in entries["llava"].options
    assert ("embeddings", "true") in entries["embed"].options
    assert "--no-mmap" not in entries["embed"].worker_args()
    assert "--reranking" in entries["rerank"].worker_args()
    assert catalogue.resolve("smol") is smol


def _env_file_variables() -> list[str]:
    return re.findall(r"^#?([A-Z][A-Z0-9_]*)=", ENV_FILE.read_text(encoding="utf-8"), re.M)


def test_env_file_names_only_documented_variables() -> None:
    names = _env_file_variables()
    assert {"LLAMA_ARG_HOST", "HF_HOME", "HF_HUB_CACHE", "LLAMA_ARG_CTX_SIZE"} <= set(names)
    section = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = section.split("## Environment variables", 1)[1]
    unknown = [name for name in names if f"| `{name}` |" not in section]
    assert not unknown, f"config/corral.env names variables Corral does not read: {unknown}"


def test_env_file_is_all_comments_and_parses_as_systemd_reads_it() -> None:
    for number, line in enumerate(ENV_FILE.read_text(encoding="utf-8").splitlines(), 1):
        assert not line or line.startswith("#"), f"corral.env:{number} is active: {line!r}"
        if re.match(r"#[A-Z]", line):  # an example assignment: no quotes, no spaces around "="
            assert re.fullmatch(r"#[A-Z][A-Z0-9_]*=\S+", line), f"corral.env:{number}: {line!r}"


def test_the_env_file_names_the_key_file_operations_md_shows() -> None:
    """config/corral.env and docs/operations.md's team example name one key file (issue 54)."""
    named = re.search(
        r"^#LLAMA_ARG_API_KEY_FILE=(\S+)$", ENV_FILE.read_text(encoding="utf-8"), re.M
    )
    assert named is not None
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert f"--api-key-file {named[1]} " in operations
