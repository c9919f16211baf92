"""The preset INI parser and the option table."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.options import OPTIONS, OptionError, find_option, normalise_options, render_worker_args
from router.presets import PresetError, load_preset_file, parse_preset_text, render_ini


def parse(text: str) -> dict[str, dict[str, str]]:
    """Sections (``[*]`` included) as plain dicts."""
    preset = parse_preset_text(text, source="models.ini")
    sections = {name: dict(section.options) for name, section in preset.sections.items()}
    return {"*": dict(preset.defaults), **sections}


def test_the_option_table_has_one_meaning_per_spelling() -> None:
    spellings = [key for spec in OPTIONS for key in (spec.name, *spec.spellings, *spec.negatives)]
    assert len(spellings) == len(set(spellings))
    for spec in OPTIONS:
        assert not spec.negatives or spec.kind == "bool", spec.name
        assert not spec.negatives or not spec.negatives[0].startswith("LLAMA_ARG_"), spec.name


def test_a_well_formed_file() -> None:
    text = (
        "; global comment\r\n"
        "# another\r\n"
        "version = 1\r\n"
        "\r\n"
        "[*]\r\n"
        "  c = 2048   ; context for everyone\r\n"
        "\r\n"
        "[ my-model ]\r\n"
        "model = models/a.gguf\r\n"
        "chat-template = {#keep#}{{ x }}  # but not this\r\n"
        "alias=first, second\r\n"
        "\t temp =0.7\t\r\n"
        "[last]\rm = b.gguf"
    )
    assert parse(text) == {
        "*": {"ctx-size": "2048"},
        "my-model": {
            "model": "models/a.gguf",
            "chat-template": "{#keep#}{{ x }}",
            "alias": "first, second",
            "temp": "0.7",
        },
        "last": {"model": "b.gguf"},
    }


def test_keys_before_the_first_section_form_the_default_model() -> None:
    assert parse("m = x.gguf\n[other]\nm = y.gguf\n")["default"] == {"model": "x.gguf"}
    assert "default" not in parse("version = 1\n[other]\nm = y.gguf\n")


def test_section_tags_are_canonicalised() -> None:
    sections = parse("[org/repo:q8_0]\nc = 1\n[org/repo2:UD-q4_k_xl]\nc = 2\n")
    assert set(sections) == {"*", "org/repo:Q8_0", "org/repo2:Q4_K_XL"}


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("ctx-size", "4096", ("ctx-size", "4096")),
        ("c", "4096", ("ctx-size", "4096")),
        ("LLAMA_ARG_CTX_SIZE", "4096", ("ctx-size", "4096")),
        ("ngl", "99", ("n-gpu-layers", "99")),
        ("n-gpu-layers", "all", ("n-gpu-layers", "all")),
        ("gpu-layers", "auto", ("n-gpu-layers", "auto")),
        ("t", "-1", ("threads", "-1")),
        ("b", "512", ("batch-size", "512")),
        ("ub", "128", ("ubatch-size", "128")),
        ("n", "-1", ("n-predict", "-1")),
        ("s", "42", ("seed", "42")),
        ("np", "4", ("parallel", "4")),
        ("temperature", "1", ("temp", "1")),
        ("temp", "0.70", ("temp", "0.7")),
        ("rope-freq-base", "1e6", ("rope-freq-base", "1000000")),
        ("fa", "on", ("flash-attn", "on")),
        ("flash-attn", "enabled", ("flash-attn", "on")),
        ("LLAMA_ARG_FLASH_ATTN", "-1", ("flash-attn", "auto")),
        ("ctk", "Q8_0", ("cache-type-k", "q8_0")),
        ("ctv", "f16", ("cache-type-v", "f16")),
        ("sleep-idle-seconds", "-1", ("sleep-idle-seconds", "-1")),
        ("jinja", "on", ("jinja", "true")),
        ("LLAMA_ARG_JINJA", "0", ("jinja", "false")),
        ("no-jinja", "true", ("jinja", "false")),
        ("no-mmap", "true", ("mmap", "false")),
        ("no-mmap", "off", ("mmap", "true")),
        ("LLAMA_ARG_NO_MMAP", "1", ("mmap", "false")),
        ("mmap", "Disabled", ("mmap", "false")),
        ("no-slots", "enabled", ("slots", "false")),
        ("no-webui", "1", ("webui", "false")),
        ("mlock", "TRUE", ("mlock", "true")),
        ("hf", "org/repo:Q4_K_M", ("hf-repo", "org/repo:Q4_K_M")),
        ("a", "x,y", ("alias", "x,y")),
        ("load-on-startup", "on", ("load-on-startup", "true")),
        ("__PRESET_STOP_TIMEOUT", "5", ("stop-timeout", "5")),
        ("dedup-cache-models", "1", ("dedup-cache-models", "true")),
        ("ttl", "300", ("ttl", "300")),
        ("ttl", "0.5", ("ttl", "0.5")),
        ("pin", "on", ("pin", "true")),
        ("rerank", "on", ("reranking", "true")),
        ("memory", "6G", ("memory", str(6 << 30))),
        ("memory", "512m", ("memory", str(512 << 20))),
        ("memory", "1.5GiB", ("memory", str(3 << 29))),
        ("memory", "4096", ("memory", "4096")),
        ("LLAMA_ARG_RERANKING", "1", ("reranking", "true")),
    ],
)
def test_spellings_and_values(key: str, value: str, expected: tuple[str, str]) -> None:
    assert normalise_options([(key, value)], where="here") == dict([expected])


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("ctx-size", "big", "key 'ctx-size': expected an integer, got 'big'"),
        ("c", "1.5", "key 'c': expected an integer, got '1.5'"),
        ("ctx-size", "-1", "expected a number of at least 0"),
        ("temp", "warm", "key 'temp': expected a number, got 'warm'"),
        ("temp", "nan", "expected a finite number"),
        ("ttl", "0", "key 'ttl': expected a number above 0"),
        ("stop-timeout", "-3", "key 'stop-timeout': expected a number of at least 0"),
        ("sleep-idle-seconds", "0", "expected a number above 0"),
        ("jinja", "maybe", "key 'jinja': expected on|off"),
        ("no-mmap", "", "key 'no-mmap': expected on|off"),
        ("pin", "yes", "key 'pin': expected on|off"),
        ("fa", "sometimes", "key 'fa': expected on|off"),
        ("ctk", "q3_k", "key 'ctk': expected one of f32, f16"),
        ("n-gpu-layers", "most", "expected an integer"),
        ("memory", "lots", "key 'memory': expected a size such as 512M or 8G, got 'lots'"),
        ("memory", "-1G", "expected a size"),
        ("memory", "8X", "expected a size"),
    ],
)
def test_bad_values_name_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(OptionError) as caught:
        normalise_options([(key, value)], where="models.ini: section [foo]")
    assert str(caught.value).startswith("models.ini: section [foo]: ")
    assert message in str(caught.value)


def test_unknown_keys_are_errors_and_keys_are_case_sensitive() -> None:
    with pytest.raises(PresetError, match=r"^models.ini: section \[foo\]: unknown key 'ctx-sise'$"):
        parse("[foo]\nctx-sise = 1\n")
    with pytest.raises(PresetError, match="unknown key 'CTX-SIZE'"):
        parse("[foo]\nCTX-SIZE = 1\n")
    with pytest.raises(PresetError, match=r"section \[\*\]: unknown key 'nope'"):
        parse("[*]\nnope = 1\n")


def test_bad_value_in_a_file_names_file_section_and_key() -> None:
    with pytest.raises(
        PresetError, match=r"^models.ini: section \[foo\]: key 'ctx-size': expected an integer"
    ):
        parse("[foo]\nctx-size = big\n")


def test_duplicate_sections_are_errors() -> None:
    with pytest.raises(PresetError, match=r"line 5: section \[foo\] already defined at line 1"):
        parse("[foo]\nc = 1\n\n[bar]\n[foo]\nc = 2\n")
    # Tags are canonicalised first, so these two are the same section.
    with pytest.raises(PresetError, match=r"section \[o/r:Q8_0\] already defined"):
        parse("[o/r:q8_0]\n[o/r:Q8_0]\n")
    with pytest.raises(PresetError, match="before the first section"):
        parse("c = 1\n[default]\n")


def test_one_option_twice_in_a_section_is_an_error() -> None:
    with pytest.raises(PresetError, match="key 'ctx-size' sets 'ctx-size' again"):
        parse("[foo]\nctx-size = 1\nctx-size = 2\n")
    with pytest.raises(PresetError, match=r"\[foo\]: key 'no-mmap' sets 'mmap' again \(as 'mmap'"):
        parse("[foo]\nmmap = true\nno-mmap = true\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[foo\n", "line 1: expected '\\[section\\]' or 'key = value'"),
        ("[foo]\njust words\n", "line 2: expected"),
        ("[foo]\n-c = 1\n", "line 2: expected"),
        ("[]\n", "line 1: empty section name"),
    ],
)
def test_malformed_lines(text: str, message: str) -> None:
    with pytest.raises(PresetError, match=f"^models.ini: {message}"):
        parse(text)


def test_load_preset_file(tmp_path: Path) -> None:
    path = tmp_path / "models.ini"
    path.write_text("[a]\nm = a.gguf\n")
    preset = load_preset_file(path)
    assert preset.path == path
    assert preset.sections["a"].line == 1
    with pytest.raises(PresetError, match=r"preset file does not exist: .*missing\.ini"):
        load_preset_file(tmp_path / "missing.ini")
    path.write_bytes(b"\xff\xfe[")
    with pytest.raises(PresetError, match="cannot read preset file"):
        load_preset_file(path)


def test_command_line_keys_may_carry_dashes() -> None:
    assert find_option("--ctx-size") == find_option("ctx-size")
    assert normalise_options([("--no-mmap", "true")], where="cli") == {"mmap": "false"}


def test_render_worker_args() -> None:
    options = [
        ("chat-template", "chatml"),
        ("ctx-size", "2048"),
        ("jinja", "true"),
        ("mlock", "false"),  # no negative flag: left out
        ("mmap", "false"),
        ("pin", "true"),  # router-only: never a worker flag
        ("webui", "false"),
    ]
    assert render_worker_args(options) == [
        "--chat-template",
        "chatml",
        "--ctx-size",
        "2048",
        "--jinja",
        "--no-mmap",
        "--no-webui",
    ]


def test_render_ini() -> None:
    text = render_ini("m", [("chat-template", "a\nb"), ("ctx-size", "1")])
    assert text == "[m]\nchat-template = a\\\nb\nctx-size = 1\n\n"
