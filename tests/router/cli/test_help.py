"""``corral --help``, ``corral serve --help`` and the answers to a typo, through a subprocess."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from corral.llama_build import llama_build_info
from corral.options.flags import WORKER_OPTIONS
from router.cli.completion import flags_in_help
from router.cli.help import COMMAND_SUMMARIES, FIRST_FLAGS
from router.cli.serve_flags import serve_parser
from tests.support.corral_cli import corral


def test_corral_help_describes_every_command_in_one_line() -> None:
    done = corral("--help")
    assert done.returncode == 0
    for command, summary in COMMAND_SUMMARIES.items():
        assert any(line.split() == [command, *summary.split()] for line in done.stdout.splitlines())


def test_serve_help_shows_the_first_flags_and_says_where_the_rest_are() -> None:
    done = corral("serve", "--help")
    assert done.returncode == 0
    shown = set(flags_in_help(done.stdout))
    assert shown >= FIRST_FLAGS  # each a real flag, spelled as the parser has it
    actions = serve_parser()._option_string_actions
    for other in shown - FIRST_FLAGS:  # only the first flags' other spellings (-m, -hf, -c, …)
        assert FIRST_FLAGS & set(actions[other].option_strings), other
    assert len(done.stdout.splitlines()) < 100  # a screen or two, not 900 lines
    text = " ".join(done.stdout.split())
    assert "corral serve --help-all" in text
    assert corral("serve", "--usage").stdout == done.stdout  # llama-server's third spelling


def test_action_flags_show_no_default() -> None:
    done = corral("serve", "--help-all")
    text = " ".join(done.stdout.split())
    for flag in ("--version", "--completion-bash", "--list-devices", "--cache-list"):
        after = text[text.index(f" {flag} ") :]
        meaning = after[: after.index(" -", 2)]  # up to the next flag
        assert "(default:" not in meaning, meaning


def test_serve_help_all_groups_every_flag_with_its_meaning_and_default() -> None:
    done = corral("serve", "--help-all")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())  # argparse wraps lines; compare words
    headings = ["server:", "models:", "security:", "logging:", "per-model options:"]
    positions = [done.stdout.index(f"\n{heading}\n") for heading in headings]
    assert positions == sorted(positions)
    assert (
        "--port PORT listen port; 0 picks a free one (the log says which) (default: 8080)" in text
    )
    assert "--models-max N models loading" in text
    assert "(default: 4) [LLAMA_ARG_MODELS_MAX]" in text
    assert "--log-requests, --no-log-requests one line per request" in text
    assert "--ctx-size INT, -c INT context size in tokens" in text
    # The negative spellings argparse hides are listed with their option.
    assert "; off: --no-mmap [LLAMA_ARG_MMAP]" in text
    assert "; off: --no-webui, --no-ui [LLAMA_ARG_UI]" in text
    for spec in WORKER_OPTIONS:
        assert f"--{spec.name}" in done.stdout


@pytest.mark.parametrize(
    ("args", "error", "hint"),
    [
        (("serve", "--pott", "1"), "unrecognized arguments: --pott 1", "did you mean --port?"),
        # A swap of two letters is one typo: --port, not --prio (difflib ties them).
        (("serve", "--prot", "8080"), "unrecognized arguments: --prot", "did you mean --port?"),
        (("serve", "--hsot", "0.0.0.0"), "unrecognized arguments: --hsot", "did you mean --host?"),
        (("serve", "--modles-max", "2"), "unrecognized arguments", "did you mean --models-max?"),
        (("serve", "--ctx-sise", "8"), "unrecognized arguments: --ctx-sise 8", "--ctx-size?"),
        (("pull", "--hf-tokn", "t", "a/b"), "unrecognized arguments: --hf-tokn", "--hf-token?"),
        (("sevre",), "unknown command 'sevre'", "did you mean 'serve'?"),
        (("lss",), "unknown command 'lss'", "did you mean 'ls'?"),
    ],
)
def test_a_typo_gets_the_error_and_a_suggestion_in_three_lines(
    args: tuple[str, ...], error: str, hint: str
) -> None:
    done = corral(*args)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) <= 3, done.stderr
    assert error in lines[0]
    assert hint in done.stderr
    assert "usage:" not in done.stderr


def test_a_typo_with_nothing_close_gets_no_suggestion() -> None:
    done = corral("serve", "--zzzzzz")
    assert done.returncode == 2
    assert "did you mean" not in done.stderr
    assert len(done.stderr.splitlines()) == 2


def test_corral_version_names_corral_and_the_llama_cpp_that_runs() -> None:
    """``b1`` is llama-server's wire spelling of a depth-1 vendored clone (corral/llama_build.py),
    not a build a person can look up: the version line names the commit and the bindings."""
    commit = llama_build_info().split("-", 1)[1]
    expected = (
        f"corral {version('corral')} (llama.cpp commit {commit}, "
        f"llama-cpp-python {version('llama_cpp_python')})"
    )
    for argv in (["--version"], ["serve", "--version"]):
        done = corral(*argv)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected
