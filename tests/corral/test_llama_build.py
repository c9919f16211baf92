"""``build_info`` names the llama.cpp that runs, as llama-server does (docs/api.md, GET /props)."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import llama_cpp

from corral.llama_build import llama_build_info


def test_build_info_is_llama_cpp_s_build_and_the_commit_its_ggml_was_built_from() -> None:
    info = llama_build_info()
    assert re.fullmatch(r"b\d+-[0-9a-f]{7,}", info), info
    # Independently of the module: the library llama_cpp itself loaded says the same commit.
    ggml = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
    ggml.ggml_commit.restype = ctypes.c_char_p
    assert info.split("-", 1)[1] == ggml.ggml_commit().decode().removesuffix("-dirty")
