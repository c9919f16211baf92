"""``corral serve --completion-bash``: Corral's bash completion script, printed for a file, as
llama-server prints its own; bash reads it and completes commands, flags and a flag's values."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from router.cli.completion import flags_in_help
from tests.support.corral_cli import corral

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    done = corral("serve", "--completion-bash")
    assert done.returncode == 0, done.stderr
    assert "no effect" not in done.stderr  # it acts: no notice, and no server started
    path = tmp_path_factory.mktemp("completion") / "corral"
    path.write_text(done.stdout)
    return path


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (``corral serve --po``), through the
    script's completion function, as bash's completion calls it."""
    assert BASH is not None
    program = (
        f"source {shlex.quote(str(script))}\n"
        f"COMP_WORDS=({shlex.join(words)}); COMP_CWORD={len(words) - 1}\n"
        '_corral; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        [BASH, "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.split()


@needs_bash
def test_bash_accepts_the_script(script: Path) -> None:
    assert BASH is not None
    subprocess.run([BASH, "-n", str(script)], check=True, timeout=30)
    text = script.read_text()
    assert "complete -o default -F _corral corral" in text


@needs_bash
def test_serve_flags_complete(script: Path) -> None:
    assert "--port" in _complete(script, "corral", "serve", "--po")
    # The option table's, the shortcuts and the router's own flags are all there.
    assert "--ctx-size" in _complete(script, "corral", "serve", "--ctx-si")
    assert "--gpt-oss-20b-default" in _complete(script, "corral", "serve", "--gpt-oss")
    assert "--models-max" in _complete(script, "corral", "serve", "--models-ma")


@needs_bash
def test_commands_and_their_own_flags_complete(script: Path) -> None:
    assert _complete(script, "corral", "r") == ["rm", "rpc-server"]
    assert _complete(script, "corral", "rm", "--f") == ["--force"]
    assert _complete(script, "corral", "rpc-server", "--allow") == ["--allow-remote"]
    assert "--models-dir" not in _complete(script, "corral", "ps", "--")  # not ps's


@needs_bash
def test_a_flag_with_fixed_values_completes_them(script: Path) -> None:
    assert _complete(script, "corral", "serve", "--log-format", "j") == ["json"]


def test_options_are_read_from_argparse_help() -> None:
    text = (
        "usage: x [-h]\n\noptions:\n"
        "  -h, --help            show this help message and exit\n"
        "  -t THREADS, --threads THREADS\n"
        "                        CPU threads -- not a flag\n"
        "  --allow-remote        allow a non-loopback --host\n"
    )
    assert flags_in_help(text) == ["-h", "--help", "-t", "--threads", "--allow-remote"]
