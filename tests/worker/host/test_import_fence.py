"""A worker keeps out of its process what only rare requests need (docs/benchmarks.md, Swaps).

The modules a ``python -m worker`` has imported are read from inside it: a ``sitecustomize`` on
its ``PYTHONPATH`` writes them out as the process exits, after the worker has served a chat
request and been stopped as the router stops it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from openai import OpenAI

from tests.support.worker_process import worker
from worker.host.import_fence import FENCED_MODULES

# Optional packages no worker imports (worker/host/import_fence.py), uvicorn's CLI, and what only a
# rare request or setting needs: numpy (a draft model, a spent reasoning budget), libmtmd
# (--mmproj), httpx (media by URL), websockets; PyYAML's modules (its bare package stays); what
# the real pdb and logging.config would bring (their stand-ins stay); llama-cpp-python's JSON
# Schema converter (Corral's port builds every grammar, the tools' too).
_KEPT_OUT = (
    *FENCED_MODULES,
    "bdb",
    "cmd",
    "logging.handlers",
    "socketserver",
    "yaml.loader",
    "yaml.dumper",
    "numpy",
    "click",
    "uvicorn.main",
    "llama_cpp.mtmd_cpp",
    "llama_cpp.llama_grammar",
    "httpx",
    "websockets",
)

# The worker ends with os._exit (worker/main.py), past atexit: the file is written there.
_SITECUSTOMIZE = """
import os, sys

def _write_modules():
    with open(os.environ["CORRAL_TEST_MODULES_FILE"], "w") as out:
        out.write("\\n".join(name for name, module in sys.modules.items() if module is not None))

_exit = os._exit

def _exit_after_writing(code):
    _write_modules()
    _exit(code)

os._exit = _exit_after_writing
"""


def test_a_worker_that_served_a_chat_imports_none_of_what_it_does_not_need(
    models_dir: Path, tmp_path: Path
) -> None:
    # Each is installed here, so its absence below is the worker's doing.
    for name in _KEPT_OUT:
        assert importlib.util.find_spec(name.split(".")[0]) is not None, name
    (tmp_path / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    modules_file = tmp_path / "modules.txt"
    env = {"PYTHONPATH": str(tmp_path), "CORRAL_TEST_MODULES_FILE": str(modules_file)}
    with (
        worker(models_dir / "alpha.gguf", env=env) as child,
        OpenAI(base_url=f"{child.url}/v1", api_key="none") as client,
    ):
        stream = client.chat.completions.create(
            model="alpha",
            messages=[{"role": "user", "content": "hello"}],
            max_tokens=4,
            stream=True,
        )
        assert [chunk for chunk in stream]
        assert child.stop() == 0
    imported = set(modules_file.read_text().split("\n"))
    assert "worker.lifecycle" in imported  # the file describes a worker that served
    assert "jinja2" in imported  # and one that rendered a chat template
    leaked = sorted(name for name in _KEPT_OUT if name in imported)
    assert leaked == [], f"a worker imported {leaked}"
