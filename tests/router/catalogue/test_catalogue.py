"""The catalogue: models-dir, ``-m``, hub cache and preset sources merged into entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from router.catalogue.catalogue import (
    Catalogue,
    CatalogueError,
    CatalogueSources,
    build_catalogue,
)
from tests.support.files.hub_cache import add_snapshot


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF")
    return path


def _build(
    *,
    models_dir: Path | None = None,
    model_files: list[Path] | None = None,
    preset: str | None = None,
    preset_dir: Path | None = None,
    cache_dir: Path | None = None,
    cli: dict[str, str] | None = None,
) -> Catalogue:
    preset_file = None
    if preset is not None:
        assert preset_dir is not None
        preset_file = preset_dir / "models.ini"
        preset_file.parent.mkdir(parents=True, exist_ok=True)
        preset_file.write_text(preset)
    return build_catalogue(
        CatalogueSources(
            models_dir=models_dir,
            model_files=model_files or [],
            preset_file=preset_file,
            cache_dir=cache_dir,
            cli_options=cli or {},
        )
    )


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A hub cache with one repo of two quantisations and an mmproj."""
    cache_dir = tmp_path / "hub"
    add_snapshot(
        cache_dir,
        "ggml-org/tiny-GGUF",
        ["tiny-Q8_0.gguf", "tiny-Q4_K_M.gguf", "mmproj-tiny-f16.gguf"],
    )
    return cache_dir


# --- models-dir and -m --------------------------------------------------------------------------


def test_models_dir_files_and_subdirectories(tmp_path: Path) -> None:
    _touch(tmp_path / "alpha.gguf")
    _touch(tmp_path / "notes.txt")
    _touch(tmp_path / "mmproj-alpha.gguf")
    _touch(tmp_path / "mtp-alpha.gguf")
    big = tmp_path / "big"
    _touch(big / "big-00002-of-00002.gguf")
    first = _touch(big / "big-00001-of-00002.gguf")
    mmproj = _touch(big / "mmproj-big-f16.gguf")
    _touch(big / "big-draft.gguf")
    _touch(tmp_path / "empty" / "readme.md")

    entries = _build(models_dir=tmp_path).entries
    assert sorted(entries) == ["alpha", "big"]
    assert entries["alpha"].path == tmp_path / "alpha.gguf"
    assert entries["alpha"].mmproj is None
    assert entries["big"].path == first
    assert entries["big"].mmproj == mmproj
    assert {entry.source for entry in entries.values()} == {"models_dir"}
    assert not any(entry.load_on_startup for entry in entries.values())


def test_missing_models_dir_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError, match=r"--models-dir .*nowhere: not a directory"):
        _build(models_dir=tmp_path / "nowhere")


def test_model_files_are_named_by_stem_and_load_at_startup(tmp_path: Path) -> None:
    model = _touch(tmp_path / "elsewhere" / "solo.gguf")
    entries = _build(model_files=[model]).entries
    assert list(entries) == ["solo"]
    assert entries["solo"].path == model.resolve()
    assert entries["solo"].load_on_startup
    with pytest.raises(CatalogueError, match=r"-m .*ghost\.gguf: no such file"):
        _build(model_files=[tmp_path / "ghost.gguf"])


def test_same_name_from_two_paths_is_an_error(tmp_path: Path) -> None:
    _touch(tmp_path / "dir" / "twin.gguf")
    other = _touch(tmp_path / "other" / "twin.gguf")
    with pytest.raises(CatalogueError, match="model 'twin' appears twice"):
        _build(models_dir=tmp_path / "dir", model_files=[other])


def test_same_file_twice_is_one_model(tmp_path: Path) -> None:
    model = _touch(tmp_path / "dir" / "once.gguf")
    entries = _build(models_dir=tmp_path / "dir", model_files=[model]).entries
    assert list(entries) == ["once"]
    assert entries["once"].load_on_startup


# --- hub cache ----------------------------------------------------------------------------------


def test_cache_models_join_the_catalogue(tmp_path: Path, cache: Path) -> None:
    _touch(tmp_path / "models" / "local.gguf")
    catalogue = _build(models_dir=tmp_path / "models", cache_dir=cache)
    assert list(catalogue.entries) == [
        "ggml-org/tiny-GGUF:Q4_K_M",
        "ggml-org/tiny-GGUF:Q8_0",
        "local",
    ]
    q8 = catalogue.entries["ggml-org/tiny-GGUF:Q8_0"]
    assert q8.source == "cache"
    assert q8.path.name == "tiny-Q8_0.gguf"
    assert q8.mmproj is not None
    assert q8.mmproj.name == "mmproj-tiny-f16.gguf"
    assert catalogue.resolve("ggml-org/tiny-GGUF:q8_0") is q8
    assert _build(cache_dir=tmp_path / "no-cache").entries == {}


# --- presets ------------------------------------------------------------------------------------


def test_precedence_cli_over_section_over_defaults(tmp_path: Path) -> None:
    _touch(tmp_path / "models" / "plain.gguf")
    _touch(tmp_path / "models" / "tuned.gguf")
    preset = (
        "[*]\nc = 1024\ntemp = 0.5\nseed = 7\nno-mmap = true\n"
        "[tuned]\nctx-size = 4096\ntemp = 0.9\nmmap = on\n"
    )
    catalogue = _build(
        models_dir=tmp_path / "models",
        preset=preset,
        preset_dir=tmp_path,
        cli={"temp": "0.1", "--threads": "3"},
    )
    plain, tuned = catalogue.entries["plain"], catalogue.entries["tuned"]
    assert plain.source == "models_dir"
    assert plain.options == (
        ("ctx-size", "1024"),
        ("mmap", "false"),
        ("seed", "7"),
        ("temp", "0.1"),
        ("threads", "3"),
    )
    assert tuned.source == "preset"
    assert dict(tuned.options) == {
        "ctx-size": "4096",
        "mmap": "true",
        "seed": "7",
        "temp": "0.1",
        "threads": "3",
    }
    assert plain.worker_args() == [
        "--ctx-size",
        "1024",
        "--no-mmap",
        "--seed",
        "7",
        "--temp",
        "0.1",
        "--threads",
        "3",
    ]


def test_defaults_apply_to_cache_models_and_sections_override_them(
    tmp_path: Path, cache: Path
) -> None:
    preset = "[*]\nngl = 99\n[ggml-org/tiny-GGUF:q8_0]\nalias = tiny\nc = 512\n"
    catalogue = _build(cache_dir=cache, preset=preset, preset_dir=tmp_path)
    q4 = catalogue.entries["ggml-org/tiny-GGUF:Q4_K_M"]
    q8 = catalogue.entries["ggml-org/tiny-GGUF:Q8_0"]
    assert (q4.source, q4.options) == ("cache", (("n-gpu-layers", "99"),))
    assert q8.source == "preset"
    assert q8.options == (("ctx-size", "512"), ("n-gpu-layers", "99"))
    assert q8.path.name == "tiny-Q8_0.gguf"
    assert q8.mmproj is not None
    assert catalogue.resolve("tiny") is q8


def test_sections_define_new_models(tmp_path: Path, cache: Path) -> None:
    config = tmp_path / "config"
    local = _touch(config / "weights" / "mine.gguf")
    projector = _touch(config / "weights" / "proj.gguf")
    absolute = _touch(tmp_path / "abs" / "abs.gguf")
    preset = (
        "[mine]\nmodel = weights/mine.gguf\nmmproj = weights/proj.gguf\n"
        f"[absolute]\nm = {absolute}\n"
        "[from-cache]\nhf-repo = ggml-org/tiny-GGUF\n"
        "[by-file]\nhf = ggml-org/tiny-GGUF\nhff = tiny-Q8_0.gguf\n"
    )
    entries = _build(cache_dir=cache, preset=preset, preset_dir=config).entries
    assert entries["mine"].path == local  # relative to the INI file, not the working directory
    assert entries["mine"].mmproj == projector
    assert entries["absolute"].path == absolute
    assert entries["from-cache"].path == entries["ggml-org/tiny-GGUF:Q4_K_M"].path
    assert entries["from-cache"].mmproj == entries["ggml-org/tiny-GGUF:Q4_K_M"].mmproj
    assert entries["by-file"].path.name == "tiny-Q8_0.gguf"
    assert {entries[name].source for name in ("mine", "absolute", "from-cache")} == {"preset"}


def test_a_section_may_point_an_existing_model_at_another_file(tmp_path: Path) -> None:
    _touch(tmp_path / "models" / "swap.gguf")
    other = _touch(tmp_path / "other.gguf")
    entries = _build(
        models_dir=tmp_path / "models", preset="[swap]\nmodel = other.gguf\n", preset_dir=tmp_path
    ).entries
    assert entries["swap"].path == other


def test_preset_only_and_corral_keys(tmp_path: Path) -> None:
    _touch(tmp_path / "m.gguf")
    preset = (
        "[*]\nstop-timeout = 3\n"
        "[m]\nload-on-startup = true\nttl = 600\npin = on\nalias = b, a ,a\ntags = x,chat\n"
        "chat-template = chatml\n"
    )
    entry = _build(models_dir=tmp_path, preset=preset, preset_dir=tmp_path).entries["m"]
    assert entry.load_on_startup
    assert entry.stop_timeout == 3.0
    assert entry.ttl == 600.0
    assert entry.pin
    assert entry.aliases == ("a", "b")
    assert entry.tags == ("chat", "x")
    assert entry.options == (("chat-template", "chatml"),)
    assert entry.worker_args() == ["--chat-template", "chatml"]
    assert entry.preset_text() == (
        "[m]\n"
        "alias = a,b\n"
        "chat-template = chatml\n"
        "load-on-startup = true\n"
        f"model = {tmp_path / 'm.gguf'}\n"
        "pin = true\n"
        "stop-timeout = 3\n"
        "tags = chat,x\n"
        "ttl = 600\n"
        "\n"
    )


def test_a_tool_set_keeps_its_order_and_all_means_every_tool(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        _touch(tmp_path / f"{name}.gguf")
    preset = (
        "[a]\ntools = grep_search, read_file,grep_search\n"
        "[b]\ntools = read_file,all\n"
        "[c]\ntools =\n"
    )
    entries = _build(models_dir=tmp_path, preset=preset, preset_dir=tmp_path).entries
    assert entries["a"].tools == ("grep_search", "read_file")
    assert "tools = grep_search,read_file\n" in entries["a"].preset_text()
    assert entries["b"].tools is None
    assert entries["c"].tools == ()  # an empty set: no tools for this model


def test_defaults_for_an_entry_without_presets(tmp_path: Path) -> None:
    entry = _build(model_files=[_touch(tmp_path / "m.gguf")]).entries["m"]
    assert (entry.stop_timeout, entry.ttl, entry.pin, entry.hidden) == (10.0, None, False, False)
    assert entry.tools is None
    assert entry.options == ()
    assert entry.worker_args() == []
    assert entry.preset_text() == f"[m]\nload-on-startup = true\nmodel = {entry.path}\n\n"


def test_file_and_name_options_from_the_command_line_are_dropped(tmp_path: Path) -> None:
    _touch(tmp_path / "m.gguf")
    entry = _build(
        models_dir=tmp_path,
        cli={"model": "/etc/passwd", "alias": "x", "hf-repo": "o/r", "c": "256"},
    ).entries["m"]
    assert entry.path == tmp_path / "m.gguf"
    assert entry.aliases == ()
    assert entry.options == (("ctx-size", "256"),)


def test_bad_command_line_options_are_errors(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError, match=r"^command line: unknown key 'bogus'$"):
        _build(cli={"bogus": "1"})
    with pytest.raises(CatalogueError, match=r"^command line: key 'ctx-size': expected an integer"):
        _build(cli={"ctx-size": "lots"})


def test_media_path_is_made_absolute_and_must_be_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As the preset's file paths: relative to the INI file; on the command line, to the
    # working directory. llama-server refuses a media path that is not a folder at startup.
    _touch(tmp_path / "models" / "m.gguf")
    (tmp_path / "presets" / "pictures").mkdir(parents=True)
    (tmp_path / "cwd" / "photos").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "cwd")
    preset = "[m]\nmedia-path = pictures\n"
    catalogue = _build(
        models_dir=tmp_path / "models", preset=preset, preset_dir=tmp_path / "presets"
    )
    assert ("media-path", str(tmp_path / "presets" / "pictures")) in catalogue.entries["m"].options
    from_cli = _build(models_dir=tmp_path / "models", cli={"media-path": "../cwd/photos"})
    assert ("media-path", str(tmp_path / "cwd" / "photos")) in from_cli.entries["m"].options
    with pytest.raises(CatalogueError, match=r"^command line: key 'media-path': not a directory"):
        _build(models_dir=tmp_path / "models", cli={"media-path": "nowhere"})
    with pytest.raises(CatalogueError, match=r"section \[m\]: key 'media-path': not a directory"):
        _build(models_dir=tmp_path / "models", preset="[m]\nmedia-path = x\n", preset_dir=tmp_path)


def test_dedup_cache_models_hides_the_plain_cache_entry(tmp_path: Path, cache: Path) -> None:
    preset = "[tiny]\nhf-repo = ggml-org/tiny-GGUF:Q8_0\ndedup-cache-models = true\n"
    catalogue = _build(cache_dir=cache, preset=preset, preset_dir=tmp_path)
    hidden = catalogue.entries["ggml-org/tiny-GGUF:Q8_0"]
    assert hidden.hidden
    assert catalogue.resolve("ggml-org/tiny-GGUF:Q8_0") is hidden  # still routable
    assert not catalogue.entries["ggml-org/tiny-GGUF:Q4_K_M"].hidden
    assert not catalogue.entries["tiny"].hidden
    without = _build(
        cache_dir=cache, preset="[tiny]\nhf = ggml-org/tiny-GGUF:Q8_0\n", preset_dir=tmp_path
    )
    assert not without.entries["ggml-org/tiny-GGUF:Q8_0"].hidden


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "message"),
    [
        ("[foo]\nctx-sise = 1\n", r"models.ini: section \[foo\]: unknown key 'ctx-sise'"),
        ("[foo]\nctx-size = big\n", r"section \[foo\]: key 'ctx-size': expected an integer"),
        ("[foo]\nmmap = perhaps\n", r"section \[foo\]: key 'mmap': expected on\|off"),
        ("[foo]\nm = a.gguf\n[foo]\n", r"section \[foo\] already defined at line 1"),
        ("[foo]\nc = 1\n", r"section \[foo\]: no model: set 'model' or 'hf-repo'"),
        ("[foo]\nmodel = missing.gguf\n", r"section \[foo\]: key 'model': no such file: "),
        ("[m]\nmmproj = missing.gguf\n", r"section \[m\]: key 'mmproj': no such file: "),
        ("[foo]\nm = m.gguf\nhf = o/r\n", r"section \[foo\]: set either 'model' or 'hf-repo'"),
        ("[foo]\nhf = org/absent:Q4_0\n", r"key 'hf-repo': 'org/absent:Q4_0' is not in the hub"),
        ("[*]\nmodel = m.gguf\n", r"section \[\*\]: key 'model' cannot be a default"),
        ("[*]\nalias = everyone\n", r"section \[\*\]: key 'alias' cannot be a default"),
    ],
)
def test_preset_errors(tmp_path: Path, preset: str, message: str) -> None:
    _touch(tmp_path / "m.gguf")
    with pytest.raises(CatalogueError, match=message) as caught:
        _build(models_dir=tmp_path, preset=preset, preset_dir=tmp_path)
    assert str(tmp_path / "models.ini") in str(caught.value)


def test_missing_preset_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError, match="preset file does not exist"):
        build_catalogue(
            CatalogueSources(
                models_dir=None,
                model_files=[],
                preset_file=tmp_path / "absent.ini",
                cache_dir=None,
                cli_options={},
            )
        )


@pytest.mark.parametrize(
    ("preset", "message"),
    [
        (
            "[a]\nalias = shared\n[b]\nalias = shared\n",
            "alias 'shared' of model 'b' is also an alias of model 'a'",
        ),
        ("[a]\nalias = b\n", "alias 'b' of model 'a' is also the name of model 'b'"),
    ],
)
def test_duplicate_aliases_name_both_models(tmp_path: Path, preset: str, message: str) -> None:
    _touch(tmp_path / "a.gguf")
    _touch(tmp_path / "b.gguf")
    with pytest.raises(CatalogueError, match=message):
        _build(models_dir=tmp_path, preset=preset, preset_dir=tmp_path)


def test_resolve_by_name_and_alias(tmp_path: Path) -> None:
    _touch(tmp_path / "a.gguf")
    catalogue = _build(models_dir=tmp_path, preset="[a]\nalias = first,a\n", preset_dir=tmp_path)
    entry = catalogue.entries["a"]
    assert entry.aliases == ("first",)  # its own name is not an alias
    assert catalogue.resolve("a") is entry
    assert catalogue.resolve("first") is entry
    assert catalogue.resolve("nobody") is None
    assert catalogue.resolve("nobody:q4") is None


def test_no_mmproj_unpairs_found_projectors_but_keeps_named_ones(
    tmp_path: Path, cache: Path
) -> None:
    named = _touch(tmp_path / "weights" / "proj.gguf")
    preset = (
        "[ggml-org/tiny-GGUF:Q4_K_M]\nno-mmproj = true\n\n"
        "[ggml-org/tiny-GGUF:Q8_0]\nno-mmproj = true\nmmproj = weights/proj.gguf\n"
    )
    entries = _build(preset=preset, preset_dir=tmp_path, cache_dir=cache).entries
    assert entries["ggml-org/tiny-GGUF:Q4_K_M"].mmproj is None
    assert entries["ggml-org/tiny-GGUF:Q8_0"].mmproj == named
    everywhere = _build(cache_dir=cache, cli={"no-mmproj": "true"}).entries
    assert [entry.mmproj for entry in everywhere.values()] == [None, None]


def test_mmproj_file_pairs_with_the_m_models(tmp_path: Path) -> None:
    model = _touch(tmp_path / "seer.gguf")
    projector = _touch(tmp_path / "mmproj-seer.gguf")
    catalogue = build_catalogue(
        CatalogueSources(
            models_dir=None,
            model_files=[model],
            preset_file=None,
            cache_dir=None,
            cli_options={"no-mmproj": "true"},  # a named projector is used all the same
            mmproj_file=projector,
        )
    )
    entry = catalogue.entries["seer"]
    assert entry.mmproj == projector.resolve()
    assert f"mmproj = {projector.resolve()}" in entry.preset_text()
    assert "--no-mmproj" not in entry.worker_args()
