"""Where the hub cache is: the environment variables llama.cpp and huggingface_hub read."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.hub.cache_layout import locate_cache_dir


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"LLAMA_CACHE": "/l", "HF_HUB_CACHE": "/h", "HF_HOME": "/home", "HOME": "/u"},
            "/l",
        ),
        ({"HF_HUB_CACHE": "/h", "HUGGINGFACE_HUB_CACHE": "/old", "HF_HOME": "/hh"}, "/h"),
        ({"HUGGINGFACE_HUB_CACHE": "/old", "HF_HOME": "/hh"}, "/old"),
        ({"HF_HOME": "/hh", "XDG_CACHE_HOME": "/x"}, "/hh/hub"),
        ({"XDG_CACHE_HOME": "/x", "HOME": "/u"}, "/x/huggingface/hub"),
        ({"HOME": "/u"}, "/u/.cache/huggingface/hub"),
        ({"LLAMA_CACHE": "", "HF_HOME": "/hh"}, "/hh/hub"),  # empty counts as unset
    ],
)
def test_cache_dir_precedence(env: dict[str, str], expected: str) -> None:
    assert locate_cache_dir(env) == Path(expected)


def test_cache_dir_without_any_variable_is_under_the_home_directory() -> None:
    assert locate_cache_dir({}) == Path.home() / ".cache" / "huggingface" / "hub"
