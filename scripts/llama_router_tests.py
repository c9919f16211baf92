"""Run llama.cpp's own router tests against ``corral serve``, offline, with tiny stand-in models.

    .venv/bin/python scripts/llama_router_tests.py LLAMA_CPP_DIR [PYTEST ARGS…]   # -k, -x, …
    .venv/bin/python scripts/llama_router_tests.py LLAMA_CPP_DIR unit/test_mcp_servers.py

LLAMA_CPP_DIR is the llama.cpp tree llama-cpp-python vendors (``vendor/llama.cpp`` of its
sdist). The tests run are ``unit/test_router.py`` unless test files (``unit/…``) are named.
Its ``tools/server/tests`` are copied to a scratch folder, at the same depth (the tools tests
search the tree around them), and run with
``LLAMA_SERVER_BIN_PATH`` pointing at a wrapper that runs ``corral serve``. The hub models the
tests name are tiny random-weight GGUFs laid out in a hub cache (``LLAMA_CACHE``), and the
repositories they download (``POST /models``, the remote preset) are served by
:class:`tests.support.fakes.fake_hub.FakeHub` (``HF_ENDPOINT``): nothing reaches the network. Two
changes to the copy: the session fixture that downloads every preset's real model is a no-op,
and ``wget`` (used only by tests of other files) is a stub. With ``--tools`` the wrapper adds
``--tools-root /`` and ``--tools-allow-exec``, which llama-server's tools need no flag for
(docs/tools.md, differences), and with ``--ui-mcp-proxy`` it adds ``--ui-mcp-proxy-private``
(the tests' targets are on loopback; docs/llama-server-tests.md). ``LLAMA_SERVER_BIN_PATH`` in the
environment runs another server instead (a ``llama-server`` built from the same tree, to
compare).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fakes.fake_hub import FakeHub  # noqa: E402
from tests.support.files.hub_cache import lay_out  # noqa: E402
from tests.support.files.tiny_gguf import write_tiny_gguf  # noqa: E402

__all__ = ["main"]

# The hub models test_router.py names, as (repository, file): the tag comes from the file.
CACHED = (
    ("ggml-org/tinygemma3-GGUF", "tinygemma3-Q8_0.gguf"),
    ("ggml-org/test-model-stories260K", "stories260K-F32.gguf"),
    ("ggml-org/test-model-stories260K-infill", "stories260K-infill-F32.gguf"),
)
DOWNLOADABLE = ("ggml-org/test-model-router-download", "router-download-F16.gguf")
REMOTE_PRESET = (
    "ggml-org/test-preset-ci",
    b"[tinygemma3-preset]\nhf-repo = ggml-org/tinygemma3-GGUF:Q8_0\n\n"
    b"[stories260K-test]\nhf-repo = ggml-org/test-model-stories260K:F32\n",
)
_PRESET_DOWNLOADS = "        ServerPreset.load_all()"


def _copy_tests(llama_cpp: Path, scratch: Path) -> Path:
    tests = scratch / "tools" / "server" / "tests"
    shutil.copytree(llama_cpp / "tools" / "server" / "tests", tests)
    conftest = tests / "conftest.py"
    text = conftest.read_text(encoding="utf-8")
    if _PRESET_DOWNLOADS not in text:
        raise SystemExit(f"{conftest}: the preset download fixture has changed; update this script")
    conftest.write_text(text.replace(_PRESET_DOWNLOADS, "        pass"), encoding="utf-8")
    stub = "def download(url, out=None):\n    raise RuntimeError('offline: ' + url)\n"
    (tests / "wget.py").write_text(stub, encoding="utf-8")
    (tests / "tmp").mkdir(exist_ok=True)
    return tests


def _stand_in(scratch: Path, file: str, seed: int) -> bytes:
    return write_tiny_gguf(scratch / file, name=file.split("-")[0], seed=seed).read_bytes()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    llama_cpp, pytest_args = Path(sys.argv[1]), sys.argv[2:]
    with tempfile.TemporaryDirectory(prefix="llama-router-tests-") as name:
        scratch = Path(name)
        tests = _copy_tests(llama_cpp, scratch)
        cache = scratch / "hub-cache"
        for seed, (repo, file) in enumerate(CACHED):
            lay_out(cache, {file: _stand_in(scratch, file, seed)}, repo=repo, commit=str(seed) * 40)
        wrapper = scratch / "corral-server"
        wrapper.write_text(
            '#!/bin/sh\ncase " $* " in\n'
            '  *" --tools "*) set -- --tools-root / --tools-allow-exec "$@" ;;\n'
            'esac\ncase " $* " in\n'
            '  *" --ui-mcp-proxy "*) set -- --ui-mcp-proxy-private "$@" ;;\n'
            f'esac\nexec "{ROOT}/.venv/bin/corral" serve "$@"\n'
        )
        wrapper.chmod(0o755)
        with FakeHub() as hub:
            hub.add_repo(REMOTE_PRESET[0], {"preset.ini": REMOTE_PRESET[1]})
            hub.add_repo(DOWNLOADABLE[0], {DOWNLOADABLE[1]: _stand_in(scratch, DOWNLOADABLE[1], 9)})
            env = {
                key: value
                for key, value in os.environ.items()
                if not key.startswith(("HF_", "HUGGINGFACE_", "LLAMA_ARG_"))
            }
            env.update(
                LLAMA_SERVER_BIN_PATH=os.environ.get("LLAMA_SERVER_BIN_PATH", str(wrapper)),
                LLAMA_CACHE=str(cache),
                HF_ENDPOINT=hub.url,
                HF_HOME=str(scratch / "hf-home"),
                PORT=str(_free_port()),  # not the tests' default 8080, which others may hold
            )
            command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args]
            if not any(arg.startswith("unit/") for arg in pytest_args):
                command.append("unit/test_router.py")
            return subprocess.call(command, cwd=tests, env=env)


if __name__ == "__main__":
    sys.exit(main())
