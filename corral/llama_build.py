"""Which llama.cpp Corral runs, as llama-server words it: ``build_info`` = ``b<build>-<commit>``.

Clients (llama.cpp's Web UI, its tests) parse ``build_info`` as llama.cpp's own
``llama_build_info()``; Corral's version goes in a field of its own (``corral_version``).

The commit is read from the ggml library llama-cpp-python ships (``ggml_commit()``), which
llama.cpp's build stamps with the vendored checkout's commit, so it always names the code that
actually runs. The library's ``-dirty`` suffix (the build patches the tree) is dropped, as
llama.cpp's build-info does for the llama-server binary. The build number is not in any library
llama-cpp-python ships; llama.cpp's build-info.cmake counts the checkout's commits, and
llama-cpp-python vendors llama.cpp as a depth-1 clone, so that count is 1: a llama-server built
from the same sdist reports ``b1-<commit>`` (``llama-server --version``: "build 1, commit
0c1e570" for llama-cpp-python 0.3.36). Loaded with ctypes rather than by importing llama_cpp,
so the router does not pay for llama.cpp's Python bindings.

That ``b1`` is llama-server's wire spelling, not a build a person can look up: ``--version``
(:func:`version_line`) shows the vendored commit and the llama-cpp-python release instead, which
together say which llama.cpp runs (issue 54).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["corral_version", "llama_build_info", "version_line"]

_VENDORED_BUILD_NUMBER = 1  # see the module's docstring
_UNKNOWN = "b0-unknown"  # what llama.cpp reports when it was built without git


def _ggml_commit() -> str | None:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return None
    library = Path(spec.origin).parent / "lib" / "libggml-base.so"
    try:
        ggml = ctypes.CDLL(str(library))
    except OSError:
        return None
    ggml.ggml_commit.restype = ctypes.c_char_p
    raw: bytes | None = ggml.ggml_commit()
    commit = (raw or b"").decode("ascii", "replace").removesuffix("-dirty")
    return commit if commit and commit != "unknown" else None


@functools.cache
def llama_build_info() -> str:
    """``b<build>-<commit>`` of the llama.cpp under llama-cpp-python, e.g. ``b1-0c1e570``."""
    commit = _ggml_commit()
    return f"b{_VENDORED_BUILD_NUMBER}-{commit}" if commit else _UNKNOWN


def corral_version() -> str:
    return version("corral")


def version_line() -> str:
    """What ``corral --version`` prints: Corral's version and the llama.cpp under it, as the
    vendored commit and the llama-cpp-python release that vendors it (no build number: see the
    module's docstring)."""
    try:
        bindings = f"llama-cpp-python {version('llama_cpp_python')}"
    except PackageNotFoundError:
        bindings = "llama-cpp-python not installed"
    commit = _ggml_commit()
    llama = f"llama.cpp commit {commit}, {bindings}" if commit else f"llama.cpp from {bindings}"
    return f"corral {corral_version()} ({llama})"
