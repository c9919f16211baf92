"""What a worker's dependencies would import though it never uses it, kept out of its process.

Optional packages, each installed for something else and picked up only because it is there:

- ``rich`` (litestar's CLI): structlog imports it for pretty tracebacks on a terminal; a
  worker's log is JSON unless it is run by hand, and then its tracebacks are plain;
- ``pydantic`` (the MCP SDK) and ``attrs`` (jsonschema): Litestar adds a plugin for each to
  every app; a worker's wire types are msgspec Structs;
- ``watchfiles`` (uvicorn's ``[standard]`` extra): uvicorn's ``--reload``, never used here;
- ``greenlet`` (playwright, for the web UI's tests): structlog's deprecated ``threadlocal``.
- PyYAML: Litestar imports it for its OpenAPI document in YAML, which a worker does not serve
  (no ``/schema``); the package is registered bare, so ``import yaml`` succeeds and none of
  its parser and emitter modules load.

- Two standard-library modules imported at start-up for what a worker never does: ``pdb``
  (Litestar's default debugger for ``pdb_on_exception``, off here) and ``logging.config``
  (uvicorn's ``log_config``, ``None`` here); with them go ``bdb``, ``cmd``, ``code``,
  ``logging.handlers`` and ``socketserver``, 0.7 MiB. Each is registered as an empty module
  whose attributes name this fence, should a later caller reach for one.

A ``None`` in ``sys.modules`` makes an import raise ``ImportError``, which each of them treats
as "not installed". And uvicorn's CLI: the package's ``__init__`` imports ``uvicorn.main``
(click, the reload and multiprocess supervisors) for ``uvicorn.run``; a worker uses only
``uvicorn.Server`` and ``uvicorn.Config``, so the package is registered bare (as
:mod:`worker.host.llama_bindings` does for llama-cpp-python) and those two resolve on first use.
Together about 13 MiB of each worker's memory (docs/benchmarks.md, Swaps).

Only ``python -m worker`` calls :func:`fence_unused_modules`, before anything is imported:
tests that import the worker's modules, and the router, are left alone.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

__all__ = ["FENCED_MODULES", "STAND_IN_MODULES", "bare_package", "fence_unused_modules"]

FENCED_MODULES = ("rich", "pydantic", "attr", "attrs", "watchfiles", "greenlet")
STAND_IN_MODULES = ("pdb", "logging.config")
_UVICORN_NAMES = {"Config": "uvicorn.config", "Server": "uvicorn.server"}


def bare_package(name: str, doc: str) -> types.ModuleType:
    """``name`` registered as a package whose ``__init__`` never runs; its submodules import as
    usual."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not installed")
    package = types.ModuleType(name, doc)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__file__ = spec.origin  # where the package is, for code that locates its files
    sys.modules[name] = package
    return package


def _uvicorn_attribute(name: str) -> Any:
    if name not in _UVICORN_NAMES:
        raise AttributeError(f"module 'uvicorn' has no attribute {name!r} in a worker")
    return getattr(importlib.import_module(_UVICORN_NAMES[name]), name)


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(
        name, f"{name} is not loaded in a worker (worker/host/import_fence.py)"
    )

    def missing(attribute: str) -> Any:
        raise AttributeError(f"{name}.{attribute}: {name} is not loaded in a worker")

    module.__getattr__ = missing  # type: ignore[method-assign]
    return module


def fence_unused_modules() -> None:
    for name in FENCED_MODULES:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    for name in STAND_IN_MODULES:
        if name not in sys.modules:
            sys.modules[name] = _stand_in(name)
    if "yaml" not in sys.modules:
        bare_package("yaml", "PyYAML's name alone: a worker serves no OpenAPI YAML")
    if "uvicorn" not in sys.modules:
        uvicorn = bare_package("uvicorn", "uvicorn's Server and Config, without its CLI")
        uvicorn.__getattr__ = _uvicorn_attribute  # type: ignore[method-assign]
