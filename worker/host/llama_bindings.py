"""llama.cpp's C API through llama-cpp-python's ctypes module, without the package's Python layer.

``import llama_cpp`` runs the package's ``__init__``, which imports the high-level ``Llama`` and
with it numpy, the chat formats and the tokenizer and cache classes: about 20 MiB of a worker's
resident memory (docs/benchmarks.md, Memory) for code a worker never calls. A worker needs only
the ctypes module ``llama_cpp.llama_cpp`` (and its light helper ``_utils``), so the package is
registered bare, its ``__init__`` never run, and its submodules import as usual.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

from worker.host.import_fence import bare_package

__all__ = ["llama_cpp"]


def _bindings() -> types.ModuleType:
    if "llama_cpp" not in sys.modules:
        package = bare_package("llama_cpp", "llama-cpp-python, without its __init__")
        bindings = importlib.import_module("llama_cpp.llama_cpp")
        # What the real __init__ exports from it, for code that uses `llama_cpp.llama_decode`.
        public = {name: value for name, value in vars(bindings).items() if name[0] != "_"}
        package.__dict__.update(public)
    return importlib.import_module("llama_cpp.llama_cpp")


if TYPE_CHECKING:
    import llama_cpp.llama_cpp as llama_cpp
else:
    llama_cpp = _bindings()
