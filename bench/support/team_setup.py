"""What bench/team.py sets up around its routers and counts from them: the models (stand-ins
written once), the API key file (a key per actor, with its class where the tree takes one) and
the model loads each server says it started (docs/benchmarks.md, Team)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import httpx

from bench.support.servers import DEFAULT_MODEL, REPO, log
from bench.support.standin import write_standin
from bench.team_trace import MODELS, Trace

__all__ = [
    "KEY_CLASSES",
    "OBSERVER",
    "classes_known",
    "corral_loads",
    "key_file",
    "llama_loads",
    "models_dir",
    "secret",
]

STANDINS = {"standin-360m": "smollm2-360m", "standin-135m": "smollm2-135m"}
OBSERVER = "observer"  # the bench's own key, to read /metrics and /models
# The key class each actor's key carries on Corral (the agent is a program someone waits on).
KEY_CLASSES = {"interactive": "interactive", "agent": "interactive", "batch": "batch"}
# llama.cpp's router logs this line each time it starts a model's process (server-models.cpp).
_SPAWN = re.compile(r"spawning server instance with name=(\S+) on port")
_CORRAL_LOADS = re.compile(r'^corral_model_loads_total\{model="([^"]+)"\} (\S+)$', re.M)


def secret(key: str) -> str:
    return f"team-{key}"


def models_dir(directory: Path) -> Path:
    """The three models under the names the trace asks for, stand-ins written once."""
    cache = REPO / "models" / "team-bench"
    cache.mkdir(parents=True, exist_ok=True)
    files = {MODELS[0]: DEFAULT_MODEL}
    for name, shape in STANDINS.items():
        files[name] = cache / f"{shape}-f16.gguf"
        if not files[name].is_file():
            log(f"writing the stand-in {files[name].name} (once)")
            partial = files[name].with_suffix(".partial")
            write_standin(DEFAULT_MODEL, shape, partial)
            partial.rename(files[name])
    models = directory / "models"
    models.mkdir()
    for name, path in files.items():
        (models / f"{name}.gguf").symlink_to(path.resolve())
        with path.open("rb") as weights:  # the page cache holds them for both sides alike
            while weights.read(1 << 24):
                pass
    return models


def key_file(directory: Path, trace: Trace, classes: bool) -> Path:
    lines = [f"{secret(OBSERVER)} admin"]
    for key, cls in sorted({(actor.key, actor.cls) for actor in trace.actors}):
        lines.append(f"{secret(key)} inference" + (f" class={KEY_CLASSES[cls]}" if classes else ""))
    path = directory / "keys.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def classes_known() -> bool:
    """Whether this tree's key file takes ``class=`` (before the scheduler change it refuses
    any word it does not know, and the router would not start)."""
    from router.security.api_keys import ApiKeyFileError, load_api_keys

    with tempfile.TemporaryDirectory() as directory:
        probe = Path(directory) / "keys.txt"
        probe.write_text("probe inference class=interactive\n", encoding="utf-8")
        try:
            load_api_keys([], [probe])
        except ApiKeyFileError:
            return False
    return True


def _observer() -> dict[str, str]:
    return {"Authorization": f"Bearer {secret(OBSERVER)}"}


def corral_loads(url: str) -> dict[str, int]:
    """Loads started: completed ones from ``/metrics`` (``corral_model_loads_total``) plus any
    still loading in ``/models``, so that a load under way counts as llama.cpp's spawn does."""
    text = httpx.get(f"{url}/metrics", headers=_observer(), timeout=30).text
    loads = {model: int(float(value)) for model, value in _CORRAL_LOADS.findall(text)}
    for model in httpx.get(f"{url}/models", headers=_observer(), timeout=30).json()["data"]:
        if model["status"]["value"] == "loading":
            loads[model["id"]] = loads.get(model["id"], 0) + 1
    return {model: n for model, n in loads.items() if n}


def llama_loads(log_text: str) -> dict[str, int]:
    """Model processes llama.cpp's router started, from its log."""
    loads: dict[str, int] = {}
    for model in _SPAWN.findall(log_text):
        loads[model] = loads.get(model, 0) + 1
    return loads
