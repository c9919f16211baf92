"""What a hub repository's preset may set: upstream llama.cpp's whitelist, less paths and URLs."""

from __future__ import annotations

import pytest

from corral.options.table import OPTIONS, find_option
from router.catalogue.llama_server_keys import LLAMA_SERVER_KEYS, LLAMA_SERVER_SAMPLING_KEYS
from router.catalogue.presets import PresetError, parse_preset_text
from router.catalogue.remote_presets import REMOTE_PRESET_KEYS, remote_key_allowed

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


def test_the_table_is_upstreams_whitelist_less_paths_and_urls() -> None:
    # Only keys llama-server or Corral still knows: the vocoder's are gone from both.
    known = {k for k in UPSTREAM_NAMED if k in LLAMA_SERVER_KEYS or find_option(k) is not None}
    upstream = LLAMA_SERVER_SAMPLING_KEYS | known
    for key in sorted(upstream):
        assert remote_key_allowed(key) == (_option(key) not in PATHS_AND_URLS), key
    assert {_option(key) for key in upstream} >= REMOTE_PRESET_KEYS


def test_every_other_option_is_refused() -> None:
    refused = [spec for spec in OPTIONS if spec.name not in REMOTE_PRESET_KEYS]
    dangerous = {"model", "mmproj", "chat-template-file", "media-path", "rpc", "kv-cache-dir"}
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
