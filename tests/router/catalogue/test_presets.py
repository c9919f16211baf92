"""The preset INI parser (the option table itself: tests/corral/options/test_table.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from corral.options.table import OPTIONS
from router.catalogue.llama_server_keys import LLAMA_SERVER_KEYS
from router.catalogue.presets import PresetError, load_preset_file, parse_preset_text, render_ini


def parse(text: str) -> dict[str, dict[str, str]]:
    """Sections (``[*]`` included) as plain dicts."""
    preset = parse_preset_text(text, source="models.ini")
    sections = {name: dict(section.options) for name, section in preset.sections.items()}
    return {"*": dict(preset.defaults), **sections}


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


def test_llama_server_keys_corral_does_not_act_on_load_with_a_notice() -> None:
    text = (
        "[*]\nthreads-http = 4\nLLAMA_ARG_CONT_BATCHING = 1\n"
        "[draft]\nmodel = a.gguf\nspec-draft-p-split = 0.1\nc = 512\n"
    )
    with capture_logs() as logs:
        assert parse(text) == {"*": {}, "draft": {"model": "a.gguf", "ctx-size": "512"}}
    noticed = [(log["section"], log["key"]) for log in logs if "no effect" in log["event"]]
    assert noticed == [("*", "threads-http"), ("*", "LLAMA_ARG_CONT_BATCHING"),
                       ("draft", "spec-draft-p-split")]  # fmt: skip
    assert all(log["log_level"] == "warning" for log in logs)


def test_the_llama_server_key_table_has_every_upstream_spelling_corral_takes() -> None:
    # Preset-only keys (not flags), Corral's own, and mmap/mlock, which this llama.cpp replaced
    # by --load-mode but older llama-server presets still carry, as they carry -cd.
    not_flags = {"load-on-startup", "stop-timeout", "dedup-cache-models", "ttl", "pin", "memory"}
    not_flags |= {"min-residency", "replicas", "replicas-max"}
    own = {"kv-persist", "no-kv-persist", "kv-cache-dir", "kv-cache-max", "media-allow-private"}
    own |= {"tool-mode", "courtesy-slot", "no-courtesy-slot"}
    older = {"mmap", "no-mmap", "LLAMA_ARG_MMAP", "LLAMA_ARG_NO_MMAP", "mlock", "LLAMA_ARG_MLOCK"}
    older |= {"ctx-size-draft", "cd", "LLAMA_ARG_CTX_SIZE_DRAFT"}
    spellings = {
        key
        for spec in OPTIONS
        for key in (spec.name, *spec.spellings, *spec.negatives)
        if not key.startswith("__PRESET_")
    }
    assert spellings - LLAMA_SERVER_KEYS == not_flags | own | older
    assert {"spec-draft-hf", "hf-repo-draft", "cache-reuse", "LLAMA_ARG_NO_CONT_BATCHING"} <= (
        LLAMA_SERVER_KEYS
    )


def test_unknown_keys_are_errors_and_keys_are_case_sensitive() -> None:
    typo = r"^models.ini: section \[foo\]: unknown key 'ctx-sise'; did you mean 'ctx-size'\?$"
    with pytest.raises(PresetError, match=typo):
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


def test_render_ini() -> None:
    text = render_ini("m", [("chat-template", "a\nb"), ("ctx-size", "1")])
    assert text == "[m]\nchat-template = a\\\nb\nctx-size = 1\n\n"


@pytest.mark.parametrize(("word", "value"), [("yes", "true"), ("YES", "true"), ("no", "false")])
def test_every_boolean_takes_yes_and_no(word: str, value: str) -> None:
    sections = parse(f"[foo]\npin = {word}\nmlock = {word}\nno-mmap = {word}\n")
    negated = "false" if value == "true" else "true"
    assert sections["foo"] == {"pin": value, "mlock": value, "mmap": negated}
