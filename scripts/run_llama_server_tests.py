"""Run llama.cpp's own server tests against Corral, offline, with tiny stand-in models.

``tools/server/tests/unit/test_*.py`` of the llama.cpp tree vendored in llama-cpp-python start
the server binary named by ``LLAMA_SERVER_BIN_PATH`` with llama-server's flags and fetch their
models from the Hugging Face hub. This script makes that run offline and repeatable:

- the tests' models (``ServerPreset`` in their ``utils.py``) are laid out as a hub cache
  (``LLAMA_CACHE``, huggingface_hub's layout) holding random-weight stand-ins from
  ``tests/support/files/tiny_gguf.py`` under the same repository and file names, and the tests'
  download step (``ServerPreset.load_all``) is switched off;
- the server is one of ``corral`` (``corral serve`` from this checkout's ``.venv``), ``worker``
  (``python -m worker`` alone, llama-server's flags translated: the model file resolved from
  the cache, flags the worker lacks dropped) or a path to a ``llama-server`` binary, to measure
  which tests upstream itself passes with the same stand-ins;
- the vendored tests need packages Corral does not (``requests``, ``wget``, ...), so they run
  from their own virtual environment under ``build/llama-server-tests/``.

Stand-ins make every assertion on the real models' text or exact token counts fail, on
llama-server too: compare against llama-server's result, not against all tests
(docs/development.md, "llama.cpp's server tests").

    .venv/bin/python scripts/run_llama_server_tests.py --server corral [-- PYTEST ARGS]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import venv
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bootstrap import CACHE, LLAMA_CPP_VERSION  # noqa: E402
from tests.support.files.hub_cache import lay_out  # noqa: E402
from tests.support.files.tiny_gguf import WORDS, write_tiny_gguf  # noqa: E402
from tests.support.files.tiny_lora import write_tiny_lora  # noqa: E402
from tests.support.files.tiny_mmproj import write_tiny_mmproj  # noqa: E402

WORK = ROOT / "build" / "llama-server-tests"
DEFAULT_LLAMA_CPP = Path(
    os.environ.get(
        "CORRAL_LLAMA_CPP_SOURCE", "/work/llama/sdist/llama_cpp_python-0.3.36/vendor/llama.cpp"
    )
)
TEST_PACKAGES = (
    "pytest",
    "pytest-timeout",
    "requests",
    "openai",
    "aiohttp",
    "filelock",
    "numpy",
    "wget",
)
# A hung server must fail its test, not stall the run: the tests' own request timeout is 600 s.
TEST_TIMEOUT_SECONDS = 180
# Not single-server tests: the router has Corral's own suite, and test_stream.py needs a
# real model's text.
SKIPPED_FILES = ("test_router.py", "test_stream.py")

# ServerPreset's models: (repository, file in it, what the stand-in needs).
STAND_INS: tuple[tuple[str, str, dict[str, object]], ...] = (
    ("ggml-org/models", "tinyllamas/stories260K.gguf", {}),
    ("ggml-org/test-model-stories260K", "stories260K-F16.gguf", {}),
    ("ggml-org/test-model-stories260K-infill", "stories260K-infill-F16.gguf", {"fim": True}),
    ("ggml-org/stories15M_MOE", "stories15M_MOE-F16.gguf", {}),
    ("ggml-org/models", "bert-bge-small/ggml-model-f16.gguf", {"pooling": "mean"}),
    (
        "ggml-org/models",
        "jina-reranker-v1-tiny-en/ggml-model-f16.gguf",
        {"rerank_template": "{query}</s><s>{document}"},
    ),
    ("ggml-org/tinygemma3-GGUF", "tinygemma3-Q8_0.gguf", {}),
    # test_basic's split model, three shards as gguf-split names them. It writes only "little"
    # and "girl", the words the test looks for in the real stories15M's answer, so that the
    # test checks what it is about: that a model in three files loads and answers.
    (
        "ggml-org/models",
        "tinyllamas/split/stories15M-q8_0.gguf",
        {"shards": 3, "words": f"{WORDS} girl", "only_words": ("little", "girl")},
    ),
)
# Projectors beside STAND_INS' models, found the way a hub repository's mmproj is: tinygemma3's
# lets test_security's file:// media tests (--media-path) read an image.
PROJECTORS: tuple[tuple[str, str], ...] = (("ggml-org/tinygemma3-GGUF", "mmproj-tinygemma3.gguf"),)
# The media files the tests read from the llama.cpp tree by relative paths (--media-path).
MEDIA_FILES = ("tools/mtmd/test-1.jpeg",)

# Files the tests fetch with ``download_file`` into their ``tmp/`` (which skips a file already
# there): the draft model of test_speculative.py, with the stories stand-ins' vocabulary, and the
# LoRA adapter of test_lora.py, made for the stories15M_MOE stand-in (STAND_INS' index 3).
DOWNLOADED_DRAFT = "stories15M-q4_0.gguf"
DOWNLOADED_LORA = ("moe_shakespeare15M.gguf", 3)

# Where the tests' conftest imports from: switches off the download of every preset.
_OFFLINE_PLUGIN = '''"""Stand-ins are already in LLAMA_CACHE (scripts/run_llama_server_tests.py)."""
import utils

utils.ServerPreset.load_all = staticmethod(lambda: None)
'''

# llama-server flags the vendored utils.py passes, with how many values each takes; the worker
# wrapper needs the arity to drop a flag the worker lacks together with its value.
_FLAG_ARITY = {
    "--offline": 0,
    "--cont-batching": 0,
    "--embedding": 0,
    "--reranking": 0,
    "--metrics": 0,
    "--kv-unified": 0,
    "--swa-full": 0,
    "--slots": 0,
    "--no-slots": 0,
    "--verbose": 0,
    "--context-shift": 0,
    "--no-ui": 0,
    "--no-models-autoload": 0,
    "--jinja": 0,
    "--no-jinja": 0,
    "--no-mmproj": 0,
    "--no-cache-idle-slots": 0,
    "--ui-mcp-proxy": 0,
    "--backend_sampling": 0,
}

_WORKER_WRAPPER = '''#!{python}
"""llama-server's command line for ``python -m worker``: resolve the hub model, drop the rest."""
import os, sys
from pathlib import Path

sys.path.insert(0, {root!r})
from corral.hub.cache_layout import repo_folder_name
from corral.hub.cache_scan import scan_cache
from corral.hub.mmproj import is_mmproj
from worker.settings.parse import worker_flags

arity = {arity!r}
args, model, repo, file = sys.argv[1:], None, None, None
kept, dropped, i = [], [], 0
known = worker_flags()
while i < len(args):
    flag = args[i]
    width = arity.get(flag, 1)
    values = args[i + 1 : i + 1 + width]
    i += 1 + width
    if flag in ("--hf-repo", "-hf"):
        repo = values[0]
    elif flag in ("--hf-file", "-hff"):
        file = values[0]
    elif flag in known:
        kept += [flag, *values]
    else:
        dropped.append(flag)
if repo is not None:
    name, _, tag = repo.partition(":")
    snapshots = Path(os.environ["LLAMA_CACHE"]) / repo_folder_name(name) / "snapshots"
    files = sorted(p for p in snapshots.rglob("*.gguf") if not is_mmproj(p.name))
    if file is not None:
        files = [p for p in files if p.as_posix().endswith("/" + file)]
    elif tag:
        files = [p for p in files if tag.lower() in p.name.lower()]
    if not files:
        sys.exit(f"worker wrapper: {{repo}} {{file or ''}} is not in the cache")
    kept = ["--model", str(files[0]), *kept]
    if "--no-mmproj" not in dropped and "--mmproj" not in kept:
        # As llama-server with -hf (and the router): the repository's projector goes with it.
        cache = Path(os.environ["LLAMA_CACHE"])
        paired = [m.mmproj for m in scan_cache(cache) if m.path == files[0] and m.mmproj]
        kept += ["--mmproj", str(paired[0])] if paired else []
print("worker wrapper: dropped", " ".join(dropped) or "nothing", file=sys.stderr, flush=True)
os.execv(sys.executable, [sys.executable, "-m", "worker", *kept])
'''


def _ensure_test_venv() -> Path:
    python = WORK / "venv" / "bin" / "python"
    stamp = WORK / "venv" / "corral-packages.txt"
    wanted = "\n".join(TEST_PACKAGES)
    if not python.exists():
        venv.create(WORK / "venv", with_pip=True)
    if not stamp.exists() or stamp.read_text() != wanted:
        subprocess.run([python, "-m", "pip", "install", "-q", *TEST_PACKAGES], check=True, cwd=ROOT)
        stamp.write_text(wanted)
    return python


def _stand_in(scratch: Path, index: int) -> Path:
    """STAND_INS[index]'s file (its first shard, if split) in the scratch folder."""
    return min((scratch / str(index)).iterdir())


def _write_stand_ins(cache: Path) -> Path:
    """The hub cache of stand-ins; returns the scratch folder (see :func:`_stand_in`)."""
    by_repo: dict[str, dict[str, bytes]] = {}
    scratch = cache.parent / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    for index, (repo, file, kind) in enumerate(STAND_INS):
        folder = scratch / str(index)
        folder.mkdir(parents=True)
        write_tiny_gguf(folder / Path(file).name, name=Path(file).stem, seed=index, **kind)  # type: ignore[arg-type]
        for written in sorted(folder.iterdir()):  # a split model's shards, else the one file
            by_repo.setdefault(repo, {})[str(Path(file).with_name(written.name))] = (
                written.read_bytes()
            )
    for repo, file in PROJECTORS:
        path = write_tiny_mmproj(scratch / Path(file).name)
        by_repo.setdefault(repo, {})[file] = path.read_bytes()
    shutil.rmtree(cache, ignore_errors=True)
    for repo, files in by_repo.items():
        lay_out(cache, files, repo=repo)
    return scratch


def _write_downloads(tests: Path, scratch: Path) -> None:
    """The tests' ``tmp/`` (upstream's checkout has it; --slot-save-path names it) with the
    files their ``download_file`` would fetch."""
    tmp = tests / "tmp"
    tmp.mkdir()
    write_tiny_gguf(tmp / DOWNLOADED_DRAFT, name=Path(DOWNLOADED_DRAFT).stem, seed=len(STAND_INS))
    lora, base = DOWNLOADED_LORA
    write_tiny_lora(tmp / lora, _stand_in(scratch, base))


def _mirror(source: Path, target: Path, copied: tuple[str, ...]) -> Path:
    """``target`` with a link to each entry of ``source`` except ``copied[0]``, which is
    mirrored the same way one level down, and at the end of the path copied outright."""
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if copied and entry.name == copied[0]:
            if len(copied) == 1:
                shutil.copytree(entry, target / entry.name)
            else:
                _mirror(entry, target / entry.name, copied[1:])
        else:
            (target / entry.name).symlink_to(entry)
    return target.joinpath(*copied)


def _replace_link_with_copy(source: Path, tree: Path, relative: Path) -> None:
    """Make ``relative`` a real file in the linked ``tree``: each link on its way becomes a
    folder of links to what the source folder holds, then the file itself is copied."""
    here = tree
    for part in relative.parts[:-1]:
        here = here / part
        if here.is_symlink():
            here.unlink()
            _mirror(source / here.relative_to(tree), here, ())
    target = tree / relative
    target.unlink(missing_ok=True)
    shutil.copyfile(source / relative, target)


def _copy_tests(source: Path, run: Path) -> Path:
    """A private copy of the tests at the same depth in a linked tree: they write next to
    themselves (``tmp/``), get our plugin, and reach ``../../../models/templates`` and
    ``../../../tools/mtmd`` by relative paths."""
    tree = run / "llama.cpp"
    shutil.rmtree(tree, ignore_errors=True)
    tests = _mirror(source, tree, ("tools", "server", "tests"))
    # Copies, not links: Corral's --media-path refuses a file whose link leads out of the folder.
    for media in MEDIA_FILES:
        _replace_link_with_copy(source, tree, Path(media))
    (tests / "corral_offline.py").write_text(_OFFLINE_PLUGIN)
    for name in SKIPPED_FILES:
        (tests / "unit" / name).unlink(missing_ok=True)
    return tests


def _server_binary(server: str) -> Path:
    bin_dir = WORK / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    if server == "corral":
        wrapper = bin_dir / "corral-serve"
        # The tests' /cors-proxy targets are on loopback, which Corral refuses unless told
        # (docs/llama-server-tests.md).
        wrapper.write_text(
            '#!/bin/sh\ncase " $* " in\n'
            '  *" --ui-mcp-proxy "*) set -- --ui-mcp-proxy-private "$@" ;;\n'
            f'esac\nexec {ROOT}/.venv/bin/python -m router serve "$@"\n'
        )
    elif server == "worker":
        wrapper = bin_dir / "corral-worker"
        wrapper.write_text(
            _WORKER_WRAPPER.format(
                python=ROOT / ".venv" / "bin" / "python", root=str(ROOT), arity=_FLAG_ARITY
            )
        )
    else:
        return Path(server).resolve()
    wrapper.chmod(0o755)
    return wrapper


def _free_port() -> int:
    # The tests need a fixed port (PORT); pick one free now rather than 8080, which other
    # servers on a shared machine may hold.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _summarise(junit: Path, outcome_file: Path) -> dict[str, str]:
    """One line per test, ``passed``/``failed``/``skipped`` and its id, for diffing two runs;
    returns the outcomes by test id."""
    lines: list[str] = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            verdict = "failed"
        elif case.find("skipped") is not None:
            verdict = "skipped"
        else:
            verdict = "passed"
        lines.append(f"{verdict} {test_id}")
    outcome_file.write_text("\n".join(sorted(lines)) + "\n")
    counts = {
        v: sum(line.startswith(v + " ") for line in lines) for v in ("passed", "failed", "skipped")
    }
    print(f"{outcome_file}: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    return {line.split(" ", 1)[1]: line.split(" ", 1)[0] for line in lines}


def llama_cpp_tree(given: Path | None) -> Path:
    """The llama.cpp tree to take the tests from: ``given``, else the default one, else the
    llama-cpp-python sdist bootstrap.py builds from (from PyPI, once; its tests, templates and
    the media files they read)."""
    if given is not None or DEFAULT_LLAMA_CPP.is_dir():
        return given or DEFAULT_LLAMA_CPP
    tree = CACHE / f"llama_cpp_python-{LLAMA_CPP_VERSION}" / "vendor" / "llama.cpp"
    if (tree / "tools" / "server" / "tests").is_dir() and all(
        (tree / media).is_file() for media in MEDIA_FILES
    ):
        return tree
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
             ":all:", "--dest", scratch, f"llama-cpp-python=={LLAMA_CPP_VERSION}"],
            check=True,
        )  # fmt: skip
        sdist = next(Path(scratch).glob("llama_cpp_python-*.tar.gz"))
        wanted = tuple(
            f"llama_cpp_python-{LLAMA_CPP_VERSION}/vendor/llama.cpp/{part}"
            for part in ("tools/server/tests/", "models/templates/", *MEDIA_FILES)
        )
        with tarfile.open(sdist) as archive:
            members = [m for m in archive.getmembers() if m.name.startswith(wanted)]
            archive.extractall(CACHE, members=members, filter="data")
    return tree


def run_suite(
    server: str, name: str, llama_cpp: Path, pytest_args: list[str]
) -> tuple[int, dict[str, str]]:
    """Run the tests against ``server``; pytest's exit code and each test's outcome by id."""
    python = _ensure_test_venv()
    # Each run in a folder of its own, so that runs against two servers can go side by side.
    run = WORK / "runs" / name
    cache = run / "hub"
    scratch = _write_stand_ins(cache)
    tests = _copy_tests(llama_cpp, run)
    _write_downloads(tests, scratch)
    results = WORK / "results"
    results.mkdir(parents=True, exist_ok=True)
    junit = results / f"{name}.xml"
    junit.unlink(missing_ok=True)
    env = {
        **os.environ,
        "LLAMA_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "LLAMA_SERVER_BIN_PATH": str(_server_binary(server)),
        "PORT": str(_free_port()),
        # This checkout's code, even where .venv's editable install points at another one.
        "PYTHONPATH": str(ROOT),
    }
    for secret in ("HF_TOKEN", "LLAMA_API_KEY"):
        env.pop(secret, None)
    command = [
        str(python),
        "-m",
        "pytest",
        "-p",
        "corral_offline",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        f"--timeout={TEST_TIMEOUT_SECONDS}",
        "-q",
        *(pytest_args or ["unit"]),
    ]
    code = subprocess.run(command, cwd=tests, env=env, check=False).returncode
    if not junit.exists():
        return code, {}
    return code, _summarise(junit, results / f"{name}.txt")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--server",
        default="corral",
        help="corral, worker, or the path of a llama-server binary (default: corral)",
    )
    parser.add_argument("--llama-cpp", type=Path, help="llama.cpp tree")
    parser.add_argument("--name", help="results name (default: from --server)")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()
    name = args.name or (args.server if args.server in ("corral", "worker") else "llama-server")
    code, _ = run_suite(args.server, name, llama_cpp_tree(args.llama_cpp), args.pytest_args)
    return code


if __name__ == "__main__":
    sys.exit(main())
