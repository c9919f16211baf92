"""``[peer NAME]`` sections: what they mean and how a bad one is reported (docs/scaling.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.catalogue.presets import PresetError, parse_preset_text
from router.relay.peer_config import PeerConfig, load_peer_configs, peer_configs


def _peers(text: str, source: str = "/etc/corral/models.ini") -> tuple[PeerConfig, ...]:
    return peer_configs(parse_preset_text(text, source=source))


def test_a_full_section_and_the_defaults() -> None:
    full, plain = _peers(
        "[alpha]\nctx-size = 512\n\n"  # a model section beside them is none of theirs
        "[peer big-box]\nurl = https://gpu.lan:8443/corral/\napi-key = k1\n"
        "models = a, b ,a\nprefix = gpu/\ntimeout = 30\nrefresh = 0\nprefer = peer\n\n"
        "[peer other]\nurl = http://10.0.0.2\n"
    )
    assert (full.name, full.url, full.base_path) == (
        "big-box",
        "https://gpu.lan:8443/corral",
        "/corral",
    )
    assert (full.models, full.prefix, full.timeout, full.refresh, full.prefer) == (
        ("a", "b"), "gpu/", 30.0, 0.0, True
    )  # fmt: skip
    assert full.api_key == "k1"
    assert (plain.url, plain.models, plain.prefix, plain.prefer) == (
        "http://10.0.0.2:80", None, "", False
    )  # fmt: skip
    assert plain.api_key is None


def test_the_key_never_appears_in_a_peers_repr() -> None:
    (peer,) = _peers("[peer p]\nurl = http://h:1\napi-key = s3cret-value\n")
    assert "s3cret-value" not in repr(peer)


def test_a_key_file_is_read_next_to_the_preset(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "p.key").write_text("from-file\n")
    preset = tmp_path / "models.ini"
    preset.write_text("[peer p]\nurl = http://h:1\napi-key-file = keys/p.key\n")
    (peer,) = load_peer_configs(preset)
    assert peer.api_key == "from-file"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("url = http://h:1\ncolour = red", "unknown key 'colour'"),
        ("api-key = k", "key 'url' is required"),
        ("url = ftp://h", "expected http://HOST[:PORT][/PATH]"),
        ("url = http://user:pw@h:1", "put credentials in 'api-key'"),
        ("url = http://h:1/?x=1", "a query or fragment"),
        ("url = http://h:1\ntimeout = 0", "key 'timeout': expected seconds, more than 0"),
        ("url = http://h:1\nrefresh = -1", "key 'refresh': expected seconds, 0 or more"),
        ("url = http://h:1\nmodels = ,", "key 'models'"),
        ("url = http://h:1\nprefer = remote", "key 'prefer': expected 'local' or 'peer'"),
        ("url = http://h:1\napi-key = a\napi-key-file = b", "either 'api-key' or 'api-key-file'"),
        ("url = http://h:1\napi-key-file = /nonexistent/key", "cannot read /nonexistent/key"),
    ],
)
def test_a_bad_section_names_file_section_and_key(section: str, message: str) -> None:
    with pytest.raises(PresetError, match=r"models\.ini: section \[peer p\]") as caught:
        _peers(f"[peer p]\n{section}\n", source="/x/models.ini")
    assert message in str(caught.value)
