"""A GGUF fuzzer (issue 35): mutated headers of the test model and projector never make a
header reader raise anything but its own error, nor recurse (the walk's bounds, which keep it
from stalling, are tests/corral/hub/test_gguf_cursor.py's); a real router lists every case
(normally or with its error), reloads, answers ``/api/show`` and survives loading a few.

Every case is derived from ``SEED`` and its number alone (tests/support/files/gguf_mutations.py):
a failure names both, and ``mutated(base, fields, SEED, number)`` gives the same file again.
"""

from __future__ import annotations

import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from corral.hub.gguf_header import GGUFError, read_gguf_metadata, read_gguf_tensors
from corral.hub.mmproj_inputs import input_modalities
from router.api.ollama.listing import show_model
from router.capacity.memory_budget import kv_cache_bytes
from router.catalogue.capabilities import declares_pooling
from router.catalogue.catalogue import CatalogueEntry
from router.catalogue.file_check import entry_problem
from router.catalogue.model_details import model_details
from router.workers.launcher import worker_argv
from tests.support.files.gguf_mutations import Field, header_fields, mutated
from tests.support.files.tiny_gguf import write_tiny_gguf
from tests.support.files.tiny_mmproj import write_tiny_mmproj
from tests.support.router_process import running_router

SEED = 35
CASES = 5000
PROJECTOR_EVERY = 5  # every fifth case mutates the projector, the others the model
# The real router gets every nineteenth case, 264 of them: 19 is prime to both 5 and the 8
# families, so the sample has its share of each family, for the model and the projector.
ROUTER_EVERY = 19
LOADS = 5  # cases listed without an error that the router is asked to load
# The router under a 4 GiB address-space limit, which its workers inherit: a mutated
# hyper-parameter may ask llama.cpp for any amount of memory, and a shared machine must not
# give it (a tiny worker maps about 300 MiB, the router 250 MiB; two malloc arenas keep the
# router's threads from reserving 64 MiB each).
_LIMITED_ROUTER = (
    sys.executable,
    "-c",
    "import resource, runpy; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)); "
    "runpy.run_module('router', run_name='__main__')",
)
_LIMITED_ENV = {"MALLOC_ARENA_MAX": "2"}


@dataclass(frozen=True)
class Base:
    path: Path
    data: bytes
    fields: list[Field]


@dataclass(frozen=True)
class Bases:
    model: Base
    mmproj: Base

    def case(self, number: int) -> tuple[bool, str, bytes]:
        """Whether case ``number`` is a projector's, what was done, and the file."""
        projector = number % PROJECTOR_EVERY == 0
        base = self.mmproj if projector else self.model
        description, data = mutated(base.data, base.fields, SEED, number)
        return (
            projector,
            f"case {number} ({'mmproj' if projector else 'model'}): {description}",
            data,
        )


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    folder = tmp_path_factory.mktemp("bases")
    model = write_tiny_gguf(folder / "tiny.gguf", name="tiny")
    mmproj = write_tiny_mmproj(folder / "mmproj-tiny.gguf")
    return Bases(
        *(
            Base(path, path.read_bytes(), header_fields(path.read_bytes()))
            for path in (model, mmproj)
        )
    )


def _entry(bases: Bases, projector: bool, path: Path) -> CatalogueEntry:
    if projector:
        return CatalogueEntry("case", bases.model.path, "models_dir", mmproj=path)
    return CatalogueEntry("case", path, "models_dir")


@contextmanager
def _shallow_stack(frames: int) -> Iterator[None]:
    """Python's recursion limit just ``frames`` above the caller, so that a reader recursing
    with its input (the first one did, once per nested array) fails on the first deep case."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(traceback.extract_stack()) + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _readers(entry: CatalogueEntry, file: Path) -> list[tuple[str, Callable[[], object]]]:
    """Every header reader of the router, on the case's file: those that raise GGUFError, then
    those that must never raise."""
    return [
        ("read_gguf_metadata", lambda: read_gguf_metadata(file)),
        ("read_gguf_metadata(stop_at)", lambda: read_gguf_metadata(file, stop_at="tokenizer.")),
        ("read_gguf_tensors", lambda: read_gguf_tensors(file)),
        ("entry_problem", lambda: entry_problem(entry)),
        ("model_details", lambda: model_details(entry)),
        ("declares_pooling", lambda: declares_pooling(entry.path)),
        ("kv_cache_bytes", lambda: kv_cache_bytes(entry)),
        ("input_modalities", lambda: input_modalities(entry.mmproj)),
        ("show_model", lambda: show_model(entry)),
        ("worker_argv", lambda: worker_argv(entry)),
    ]


def test_every_case_is_read_without_an_error_but_the_readers_own(
    bases: Bases, tmp_path: Path
) -> None:
    failures: list[str] = []
    with _shallow_stack(60):
        for number in range(CASES):
            projector, description, data = bases.case(number)
            file = tmp_path / f"case{number}.gguf"  # a new name: no cached verdict applies
            file.write_bytes(data)
            entry = _entry(bases, projector, file)
            for name, read in _readers(entry, file):
                try:
                    read()
                except GGUFError:
                    if not name.startswith("read_gguf"):
                        failures.append(f"{description}: {name} raised GGUFError")
                except Exception as error:
                    failures.append(f"{description}: {name} raised {error!r}")
            problem = entry_problem(entry)
            if problem is not None and "cannot read the header" in problem:
                failures.append(f"{description}: a reader's own bug: {problem}")
            file.unlink()
    assert not failures, "\n".join(failures[:20])


def _lay_out(bases: Bases, folder: Path) -> dict[str, str | None]:
    """Every ROUTER_EVERY-th case as a model of the models dir; what the file check says of each.

    A model case is ``mNNNN.gguf``; a projector case is a folder ``pNNNN`` with the good model
    and the mutated projector beside it.
    """
    expected: dict[str, str | None] = {}
    for number in range(0, CASES, ROUTER_EVERY):
        projector, _, data = bases.case(number)
        if projector:
            name = f"p{number:04}"
            (folder / name).mkdir()
            model = folder / name / f"{name}.gguf"
            model.symlink_to(bases.model.path)
            file = folder / name / f"mmproj-{name}.gguf"
        else:
            name = f"m{number:04}"
            model = file = folder / f"{name}.gguf"
        file.write_bytes(data)
        expected[name] = entry_problem(_entry(bases, projector, file))
    return expected


def _listed(entries: list[dict[str, Any]]) -> dict[str, str | None]:
    """Each listed model's error, or None; every entry either loads or says why it cannot."""
    listed: dict[str, str | None] = {}
    for entry in entries:
        status = entry["status"]
        if status.get("failed"):
            assert isinstance(status.get("error"), str), entry
            assert status["error"], entry
        listed[entry["id"]] = status.get("error") if status.get("failed") else None
    return listed


def test_a_router_lists_reloads_and_survives_a_sample_of_the_cases(
    bases: Bases, tmp_path: Path
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    expected = _lay_out(bases, folder)
    assert sum(problem is None for problem in expected.values()) >= LOADS
    assert sum(problem is not None for problem in expected.values()) >= len(expected) // 2
    # A small context and a load deadline: a mutated hyper-parameter must not make a worker
    # hold gigabytes, and a load that hangs is ended by the router.
    args = ["--models-dir", str(folder), "--ctx-size", "128", "--load-timeout", "30"]
    with running_router(args, _LIMITED_ENV, command=_LIMITED_ROUTER) as router:
        client = router.client
        assert _listed(client.get("/models").json()["data"]) == expected
        assert client.get("/v1/models").status_code == 200
        assert client.get("/api/tags").status_code == 200
        for name in expected:
            shown = client.post("/api/show", json={"model": name})
            assert shown.status_code == 200, (name, shown.text)
        reloaded = client.get("/models", params={"reload": "1"})
        assert reloaded.status_code == 200, reloaded.text
        assert _listed(reloaded.json()["data"]) == expected
        router.process.send_signal(signal.SIGHUP)
        router.wait_for_log("models reloaded", models=sorted(expected))
        # A listed error answers 422 at once; an error-free case loads, or fails to (llama.cpp
        # checks more than the header), while the router keeps serving.
        bad = next(name for name, problem in expected.items() if problem is not None)
        assert client.post("/completion", json={"model": bad, "prompt": "a"}).status_code == 422
        loadable = [name for name, problem in expected.items() if problem is None]
        for name in loadable[:: max(1, len(loadable) // LOADS)][:LOADS]:
            body = {"model": name, "prompt": "a", "n_predict": 1}
            answer = client.post("/completion", json=body, timeout=120)
            if answer.status_code != 200:  # the error JSON, whatever the status
                assert answer.json()["error"]["message"], (name, answer.text)
            assert client.get("/health").status_code == 200
        assert router.process.poll() is None
        assert _listed(client.get("/models").json()["data"]).keys() == expected.keys()
