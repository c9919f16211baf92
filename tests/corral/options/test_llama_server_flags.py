"""The generated llama-server flags table is the installed llama-cpp-python's."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from corral.llama_build import llama_build_info
from corral.options.llama_server_flags import (
    LLAMA_CPP_COMMIT,
    LLAMA_CPP_PYTHON_VERSION,
    LLAMA_SERVER_FLAGS,
)
from scripts.bootstrap import LLAMA_CPP_VERSION


def test_the_table_is_read_from_the_pinned_llama_cpp_python() -> None:
    # Else: run scripts/gen_llama_server_flags.py on the pinned version's sdist.
    assert LLAMA_CPP_PYTHON_VERSION == LLAMA_CPP_VERSION == version("llama-cpp-python")


def test_the_table_is_read_from_the_llama_cpp_that_runs() -> None:
    # ggml stamps its library with the vendored checkout's short commit: b1-0c1e570.
    commit = llama_build_info().split("-", 1)[1]
    if commit == "unknown":
        pytest.skip("this llama-cpp-python was built without its llama.cpp commit")
    assert LLAMA_CPP_COMMIT.startswith(commit), (LLAMA_CPP_COMMIT, commit)


def test_negative_spellings_come_last_and_take_no_value() -> None:
    negated = [flag for flag in LLAMA_SERVER_FLAGS if flag.negatives]
    assert negated  # --no-perf, --no-mmap, …
    for flag in negated:
        assert flag.spellings[-len(flag.negatives) :] == flag.negatives
        assert flag.arity == 0
    by_spelling = {s: flag for flag in LLAMA_SERVER_FLAGS for s in flag.spellings}
    assert by_spelling["--no-perf"].negatives == ("--no-perf",)
    assert by_spelling["--temp"].sampling
    assert not by_spelling["--perf"].sampling
