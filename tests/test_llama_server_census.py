"""Every flag of llama-server's ``--help`` starts ``corral serve`` and ``python -m worker``.

The flags come from corral/options/llama_server_flags.py (generated from the vendored
llama.cpp's common/arg.cpp); each spelling is given alone, with a valid value, to both parsers,
and each preset key llama-server's router accepts is given to a preset. A refusal fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from corral.options.llama_server_flags import LLAMA_SERVER_FLAGS
from router.catalogue.llama_server_keys import LLAMA_SERVER_KEYS
from router.catalogue.presets import parse_preset_text
from router.cli.main import parse_serve_args
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.tls import self_signed
from worker.settings.parse import parse_worker_args

# A valid value for the flags "1" is not one for, by any spelling; {file} and {dir} are
# replaced by an existing file and directory.
_VALUES: dict[str, list[str]] = {
    "--model": ["{file}"],
    "--mmproj": ["{file}"],
    "--spec-draft-model": ["{file}"],
    "--models-dir": ["{dir}"],
    "--models-preset": ["{file}"],
    "--api-key-file": ["{file}"],
    "--chat-template-file": ["{file}"],
    "--slot-save-path": ["{dir}"],
    "--mcp-servers-config": ["{json}"],
    "--mcp-servers-json": ['{"mcpServers": {}}'],
    "--chat-template-kwargs": ["{}"],
    "--grammar-file": ["{file}"],
    "--json-schema-file": ["{json}"],
    "--json-schema": ["{}"],
    "--numa": ["distribute"],
    "--path": ["{dir}"],
    "--ui-config": ["{}"],
    "--ui-config-file": ["{json}"],
    "--ssl-key-file": ["{key}"],
    "--ssl-cert-file": ["{cert}"],
    "--media-path": ["{dir}"],
    "--flash-attn": ["on"],
    "--cache-type-k": ["f16"],
    "--cache-type-v": ["f16"],
    "--spec-draft-type-k": ["f16"],
    "--spec-draft-type-v": ["f16"],
    "--pooling": ["mean"],
    "--rope-scaling": ["linear"],
    "--split-mode": ["layer"],
    "--reasoning-format": ["auto"],
    "--reasoning": ["on"],
    "--spec-type": ["none"],
    "--logit-bias": ["15043+1"],  # llama-server refuses a bare number too
    "--log-colors": ["auto"],
    "--load-mode": ["auto"],
    "--lazy-mode": ["auto"],
    "--tools": ["read_file"],
    "--rpc": ["127.0.0.1:50052"],
    "--lora-scaled": ["{file}:0.5"],
    "--control-vector-scaled": ["{file}:0.5"],
    "--control-vector-layer-range": ["1", "2"],
    "--override-kv": ["tokenizer.ggml.add_bos_token=bool:false"],
    "--hf-repo": ["acme/tiny-GGUF"],
    "--spec-draft-hf": ["acme/tiny-GGUF"],
    "--hf-file": ["tiny-Q8_0.gguf"],
    "--host": ["127.0.0.1"],
    "--port": ["8080"],
    "--cpu-mask": ["0x1"],
    "--cpu-range": ["0-0"],
    "--spec-synth-rates": ["0.5"],
    "--reasoning-effort": ["low"],
}
# Flags that need another to make sense, as in llama-server.
_COMPANIONS: dict[str, list[str]] = {
    "--hf-file": ["-hf", "acme/tiny-GGUF"],
    "--ssl-key-file": ["--ssl-cert-file", "{cert}"],
    "--ssl-cert-file": ["--ssl-key-file", "{key}"],
}


def _placed(value: str, places: dict[str, str]) -> str:
    for name, path in places.items():
        value = value.replace("{" + name + "}", path)
    return value


def _census() -> list[tuple[str, int]]:
    """Every spelling of every flag, with how many values it takes."""
    return [(spelling, flag.arity) for flag in LLAMA_SERVER_FLAGS for spelling in flag.spellings]


def _argv(spelling: str, arity: int, places: dict[str, str]) -> list[str]:
    flag = next(f for f in LLAMA_SERVER_FLAGS if spelling in f.spellings)
    given = next((_VALUES[s] for s in flag.spellings if s in _VALUES), ["1"] * arity)
    values = [_placed(value, places) for value in given[:arity]]
    companions = next((_COMPANIONS[s] for s in flag.spellings if s in _COMPANIONS), [])
    companions = [_placed(value, places) for value in companions]
    return [*companions, spelling, *values]


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hub cache holding acme/tiny-GGUF, written once for the module's ~1,400 tests: the
    parsers only read it."""
    cache = tmp_path_factory.mktemp("census") / "hub"
    snapshot = cache / "models--acme--tiny-GGUF" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    write_tiny_gguf(snapshot / "tiny-Q8_0.gguf")
    (cache / "models--acme--tiny-GGUF" / "refs").mkdir()
    (cache / "models--acme--tiny-GGUF" / "refs" / "main").write_text("a" * 40)
    return cache


@pytest.fixture
def places(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tls_pair: tuple[Path, Path],
    hub_cache: Path,
) -> dict[str, str]:
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache))
    monkeypatch.setenv("LLAMA_CACHE", str(hub_cache))
    file = tmp_path / "file.txt"
    file.write_text("key\n")
    json_file = tmp_path / "config.json"
    json_file.write_text('{"mcpServers": {}}')
    key, cert = tls_pair
    return {
        "file": str(file),
        "dir": str(tmp_path),
        "json": str(json_file),
        "key": str(key),
        "cert": str(cert),
    }


@pytest.mark.parametrize(("spelling", "arity"), _census())
def test_corral_serve_accepts_the_flag(
    spelling: str, arity: int, places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _argv(spelling, arity, places)
    if spelling == "--list-devices":
        # It becomes python -m worker --list-devices (os.execv): given in a process of its own.
        code = f"from router.cli.main import parse_serve_args; parse_serve_args({argv!r})"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return
    try:
        parse_serve_args(argv)
    except SystemExit as exit:
        # --help, --version, --cache-list: they answer and exit, as llama-server's do.
        if exit.code != 0:
            pytest.fail(f"corral serve {' '.join(argv)}: {capsys.readouterr().err}")


@pytest.mark.parametrize(("spelling", "arity"), _census())
def test_the_worker_accepts_the_flag(
    spelling: str, arity: int, places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _argv(spelling, arity, places)
    if spelling in ("-m", "--model"):
        argv = []
    try:
        parse_worker_args(["-m", places["file"], *argv])
    except SystemExit as exit:
        if exit.code != 0:  # --help
            pytest.fail(f"python -m worker {' '.join(argv)}: {capsys.readouterr().err}")


def _preset_value(key: str, places: dict[str, str]) -> str:
    """A valid value for a preset key: its flag's, or on for a switch."""
    negative = key.startswith("LLAMA_ARG_NO_")
    flag = next(
        (
            f
            for f in LLAMA_SERVER_FLAGS
            if key in (f.env, f"LLAMA_ARG_NO_{(f.env or '')[10:]}")
            or any(s.lstrip("-") == key for s in f.spellings)
        ),
        None,
    )
    if flag is None or flag.arity == 0 or negative:
        return "true"
    given = next((_VALUES[s] for s in flag.spellings if s in _VALUES), ["1"])
    return _placed(" ".join(given), places)


@pytest.mark.parametrize("key", sorted(LLAMA_SERVER_KEYS))
def test_every_llama_server_preset_key_is_accepted(key: str, places: dict[str, str]) -> None:
    model = "" if key in ("m", "model", "LLAMA_ARG_MODEL") else f"model = {places['file']}\n"
    text = f"[tiny]\n{model}{key} = {_preset_value(key, places)}\n"
    parse_preset_text(text, source="census.ini")


def test_the_flags_that_answer_and_exit(
    places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, printed in (
        (["--version"], "corral "),
        (["--usage"], "usage: corral serve"),
        (["-cl"], "acme/tiny-GGUF"),
    ):
        with pytest.raises(SystemExit) as exit:
            parse_serve_args(argv)
        assert exit.value.code == 0
        assert printed in capsys.readouterr().out
