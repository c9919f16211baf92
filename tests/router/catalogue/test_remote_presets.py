"""What a hub repository's preset may set: upstream llama.cpp's whitelist, less paths, URLs and
what forces the answers' text; and which models it may set it for: its own only."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.options.table import OPTIONS, find_option
from router.catalogue.catalogue import Catalogue, CatalogueError, CatalogueSources, build_catalogue
from router.catalogue.llama_server_keys import LLAMA_SERVER_KEYS, LLAMA_SERVER_SAMPLING_KEYS
from router.catalogue.presets import PresetError, parse_preset_text
from router.catalogue.remote_presets import (
    OUTPUT_FORCING_KEYS,
    REMOTE_PRESET_KEYS,
    remote_key_allowed,
)
from tests.support.files.hub_cache import add_snapshot

# common/preset.cpp, get_remote_preset_whitelist: these, and every option common/arg.cpp marks
# .set_sampling() (LLAMA_SERVER_SAMPLING_KEYS, generated from the vendored arg.cpp).
UPSTREAM_NAMED = (
    "model-url",
    "hf-repo",
    "hf-repo-draft",
    "hf-repo-v",
    "hf-file-v",
    "mmproj-url",
    "pooling",
    "jinja",
    "batch-size",
    "ubatch-size",
    "cache-reuse",
    "chat-template-kwargs",
    "mmap",
)
# Upstream's, refused here all the same: their values are paths or URLs.
PATHS_AND_URLS = {"model-url", "mmproj-url", "grammar-file", "json-schema-file"}


def _option(key: str) -> str:
    found = find_option(key)
    return found[0].name if found is not None else key


def test_the_table_is_upstreams_whitelist_less_paths_urls_and_forced_output() -> None:
    # Only keys llama-server or Corral still knows: the vocoder's are gone from both.
    known = {k for k in UPSTREAM_NAMED if k in LLAMA_SERVER_KEYS or find_option(k) is not None}
    upstream = LLAMA_SERVER_SAMPLING_KEYS | known
    assert {_option(key) for key in upstream} >= OUTPUT_FORCING_KEYS
    refused = PATHS_AND_URLS | OUTPUT_FORCING_KEYS
    for key in sorted(upstream):
        assert remote_key_allowed(key) == (_option(key) not in refused), key
    assert {_option(key) for key in upstream} >= REMOTE_PRESET_KEYS


def test_every_other_option_is_refused() -> None:
    refused = [spec for spec in OPTIONS if spec.name not in REMOTE_PRESET_KEYS]
    dangerous = {"model", "mmproj", "chat-template-file", "media-path", "rpc", "kv-cache-dir",
                 "grammar", "json-schema", "logit-bias", "ignore-eos"}  # fmt: skip
    assert dangerous <= {spec.name for spec in refused}
    for spec in refused:
        for spelling in (spec.name, *spec.spellings, *spec.negatives):
            assert not remote_key_allowed(spelling), spelling
    # A llama-server key Corral does not act on, outside the whitelist.
    assert not remote_key_allowed("log-file")


def test_spellings_and_negatives_of_whitelisted_keys_are_allowed() -> None:
    for key in ("temperature", "LLAMA_ARG_TOP_K", "no-mmap", "LLAMA_ARG_NO_JINJA", "hfd", "b"):
        assert remote_key_allowed(key), key


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[peer p]\nurl = http://x\n", r"section \[peer p\] \(key 'url'\): a preset from hub"),
        ("[peer p]\n", r"section \[peer p\]: a preset from hub repository acme/x cannot add peers"),
        ("temp = 1\nslot-save-path = /\n", r"section \[default\]: key 'slot-save-path'"),
        ("[m]\nmodel = /m.gguf\n", r"section \[m\]: key 'model' is not allowed in a preset from"),
    ],
)
def test_a_remote_preset_names_the_repository_section_and_key(text: str, message: str) -> None:
    with pytest.raises(PresetError, match=message):
        parse_preset_text(text, source="/cache/preset.ini", remote="acme/x")
    parse_preset_text(text, source="/home/me/models.ini")  # the user's own: every key


_FORCING = {"grammar": 'root ::= "log in again"', "json-schema": '{"const": "x"}',
            "logit-bias": "15043+100", "ignore-eos": "true"}  # fmt: skip


@pytest.mark.parametrize("key", sorted(_FORCING))
def test_what_writes_every_answer_is_refused_remotely_and_kept_locally(key: str) -> None:
    text = f"[*]\n{key} = {_FORCING[key]}\n"
    refusal = rf"section \[\*\]: key '{key}' is not allowed in a preset from hub repository acme/x"
    with pytest.raises(PresetError, match=refusal):
        parse_preset_text(text, source="/cache/preset.ini", remote="acme/x")
    assert parse_preset_text(text, source="/home/me/models.ini").defaults == {key: _FORCING[key]}


# --- which models a remote preset configures ------------------------------------------------


def _catalogue(tmp_path: Path, preset: str, remote: str | None = "acme/x") -> Catalogue:
    """The repository's own model in the hub cache, another repository's, a --models-dir one."""
    cache = tmp_path / "hub"
    add_snapshot(cache, "acme/x", ["own-Q8_0.gguf"])
    add_snapshot(cache, "other/y", ["y-Q8_0.gguf"])
    models = tmp_path / "models"
    models.mkdir()
    (models / "mine.gguf").write_bytes(b"GGUF")
    preset_file = tmp_path / "preset.ini"
    preset_file.write_text(preset)
    return build_catalogue(
        CatalogueSources(
            models_dir=models,
            model_files=[],
            preset_file=preset_file,
            cache_dir=cache,
            cli_options={},
            preset_repo=remote,
        )
    )


def _top_k(catalogue: Catalogue) -> dict[str, str | None]:
    return {name: dict(entry.options).get("top-k") for name, entry in catalogue.entries.items()}


def test_a_remote_default_section_covers_its_own_models_only(tmp_path: Path) -> None:
    preset = "[*]\ntop-k = 5\n\n[chat]\nhf-repo = other/y:Q8_0\n\n[acme/x:Q8_0]\ntemp = 0.3\n"
    remote = _catalogue(tmp_path / "remote", preset)
    assert _top_k(remote) == {"acme/x:Q8_0": "5", "chat": "5", "mine": None, "other/y:Q8_0": None}
    assert dict(remote.entries["acme/x:Q8_0"].options)["temp"] == "0.3"  # its own: configured
    # The user's own preset: every model.
    assert set(_top_k(_catalogue(tmp_path / "local", preset, None)).values()) == {"5"}


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("[mine]\ntemp = 0.1\n", "temp"),  # a --models-dir model
        ("[other/y:Q8_0]\ntop-k = 1\n", "top-k"),  # another repository's
        ("[mine]\nhf-repo = acme/x:Q8_0\n", "hf-repo"),  # a file of its own under the name
    ],
)
def test_a_remote_section_naming_another_model_stops_the_catalogue(
    tmp_path: Path, section: str, key: str
) -> None:
    name = section[1 : section.index("]")]
    refusal = (
        rf"section \[{name}\] \(key '{key}'\): a preset from hub repository acme/x cannot"
        f" configure model '{name}', which does not come from it"
    )
    with pytest.raises(CatalogueError, match=refusal):
        _catalogue(tmp_path / "remote", section)
    _catalogue(tmp_path / "local", section, None)  # the user's own preset may
