"""Render docs/configuration.md from the code that defines Corral's options.

    .venv/bin/python scripts/gen_config_docs.py           # rewrite docs/configuration.md
    .venv/bin/python scripts/gen_config_docs.py --check   # exit 1 if it is out of date

Flags come from the real argparse parsers (``corral serve``, ``python -m worker``, ``corral
pull/ls/rm/ps``), preset keys, per-model flags and their defaults (llama-server's) from the
option table, each option's description from its row's help. Only the worker's own flags'
one-line descriptions are written here, keyed by the parser's ``dest``: a flag or key without
one stops the script, so a new option cannot reach the code without reaching the reference
(tests/docs checks both).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from unittest import mock

from corral.children.environment import SECRET_ENV
from corral.hub.cache_layout import CACHE_DIR_VARIABLES
from corral.options.flags import WORKER_OPTIONS, flag_spelling, option_flags
from corral.options.kinds import KINDS
from corral.options.table import OPTIONS, OptionSpec, find_option
from router.cli.commands import _parser as _cache_commands_parser
from router.cli.no_effect import no_effect_flags, no_effect_reason
from router.cli.serve_flags import SERVE_FLAGS
from router.cli.serve_flags import serve_parser as _serve_parser
from router.cli.shortcuts import SHORTCUT_DEST, SHORTCUTS
from worker.rpc.server import rpc_server_parser
from worker.settings.parse import parse_worker_args

__all__ = [
    "ENVIRONMENT",
    "SERVE_FLAG_HELP",
    "WORKER_FLAG_HELP",
    "EnvVar",
    "main",
    "option_strings",
    "render",
    "serve_parser",
    "worker_parser",
]

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "configuration.md"

# `corral serve`'s own flags, by argparse dest: (environment variable or "", description).
SERVE_FLAG_HELP: dict[str, tuple[str, str]] = {
    flag.dest: (flag.variable, flag.help) for flag in SERVE_FLAGS if flag.help
}

# Placeholders shown instead of argparse's (``MODEL_FILES`` and the like).
_METAVARS: dict[str, str] = {
    **{flag.dest: flag.metavar for flag in SERVE_FLAGS if flag.metavar},
    "model": "FILE",
    "mmproj": "FILE",
    "alias": "NAME[,NAME…]",
}

# `python -m worker`'s own flags (the per-model options come from OPTIONS).
WORKER_FLAG_HELP: dict[str, str] = {
    "model": "GGUF file to serve (required)",
    "alias": "model id it reports (default: the file's stem)",
    "tags": "informational tags, comma-separated, listed as the model's `tags` in `/models`",
    "mmproj": "multimodal projector to load with the model (the router passes the paired one)",
    "host": "listen address",
    "port": "listen port; `0` picks a free one and reports it",
    "api_key": "run alone: key(s) every request but `/health` needs, comma-separated, as "
    "llama-server's (the router passes none)",
    "cors_origins": "run alone: origins browsers may call from, as `corral serve --cors-origins`; "
    "`none`: no CORS headers (what the router passes)",
    "allowed_hosts": "Host names to answer besides loopback ones, as `corral serve "
    "--allowed-hosts`; `*`: any",
    "list_devices": "print the GPU devices llama.cpp sees (name, description, total and free "
    "MiB), as llama-server's `--list-devices`, then exit",
}

# Defaults that depend on the machine, or read better as written than as the worker holds them.
_WRITTEN_DEFAULTS = {
    "kv-cache-dir": "`$XDG_CACHE_HOME/corral/kv` (else `~/.cache/corral/kv`)",
    "kv-cache-max": "`4G`",
    "reasoning-budget-message": "none",
    "dry-sequence-breaker": '`\\n`, `:`, `"`, `*`',
    "samplers": "`penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature`",
    "sampler-seq": "`edskypmxt`",
    "reasoning-effort": "`default` (the template's)",
    "reasoning-preserve": "on",
    "threads-batch": "as `threads`",
}
# Defaults the worker works out when it starts (they depend on the machine or the model).
_DEFAULT_MEANS = {
    "ctx-size": "`0` (the trained context)",
    "ctx-size-draft": "the model's",
    "sleep-idle-seconds": "never",
    "threads": "the physical cores",
    "parallel": "`-1` (auto: 4 slots)",
    "kv-unified": "off; on with auto slots",
    "n-gpu-layers": "`auto`",
    "fit-target": "`1024`",
    "tensor-split": "llama.cpp's (by free memory)",
}
_NONE_MEANS = {
    "chat-template": "the GGUF's",
    "chat-template-file": "the GGUF's",
    "rope-freq-base": "the model's",
    **dict.fromkeys(("chat-template-kwargs", "ui-config", "ui-config-file"), "`{}`"),
    "spec-type": "`draft-simple` with a draft model, else none",
    "pooling": "the model's",
    "slot-save-path": "none (slot actions answer 501)",
    "media-path": "none (`file://` media answer 400)",
    "spec-draft-threads": "the model's",
    "device": "every GPU",
    "spec-draft-device": "the model's `device`",
    "mmproj-device": "the GPU with `mmproj-offload`, else the CPU",
    **dict.fromkeys(
        (
            "rope-scaling",
            "rope-scale",
            "rope-freq-scale",
            "yarn-orig-ctx",
            "yarn-ext-factor",
            "yarn-attn-factor",
            "yarn-beta-slow",
            "yarn-beta-fast",
        ),
        "the model's",
    ),
    "image-min-tokens": "the model's",
    "image-max-tokens": "the model's",
    "mtmd-batch-max-tokens": "libmtmd's (1024)",
}


@dataclass(frozen=True, slots=True)
class EnvVar:
    name: str
    read_by: str
    meaning: str


# Variables other than those of `corral serve`'s flags and of the per-model options (those two
# lists come from SERVE_FLAG_HELP and OPTIONS). A name listed twice gets one row.
ENVIRONMENT: tuple[EnvVar, ...] = (
    EnvVar(
        "HUGGING_FACE_HUB_TOKEN", "corral serve", "hub token for downloads when `HF_TOKEN` is unset"
    ),
    EnvVar(
        "LLAMA_CACHE",
        "corral serve, corral pull/ls/rm",
        "the hub cache directory (the first set of this list wins)",
    ),
    EnvVar("HF_HUB_CACHE", "corral serve, corral pull/ls/rm", "the hub cache directory"),
    EnvVar("HUGGINGFACE_HUB_CACHE", "corral serve, corral pull/ls/rm", "the hub cache directory"),
    EnvVar("HF_HOME", "corral serve, corral pull/ls/rm", "the hub cache is `$HF_HOME/hub`"),
    EnvVar(
        "XDG_CACHE_HOME",
        "corral serve, corral pull/ls/rm, scripts/bootstrap.py",
        "the hub cache is `$XDG_CACHE_HOME/huggingface/hub`; bootstrap keeps its wheels in "
        "`$XDG_CACHE_HOME/corral/wheels`",
    ),
    EnvVar(
        "HOME",
        "corral serve, corral pull/ls/rm",
        "last resort: the hub cache is `~/.cache/huggingface/hub`",
    ),
    EnvVar(
        "HF_ENDPOINT",
        "download processes, corral pull (huggingface_hub)",
        "another hub address (a mirror)",
    ),
    EnvVar(
        "HF_HUB_OFFLINE",
        "download processes, corral pull (huggingface_hub)",
        "`1`: every download fails with “HF_HUB_OFFLINE is set”",
    ),
    EnvVar("HF_TOKEN", "corral pull (huggingface_hub)", "`corral pull --hf-token` when absent"),
    EnvVar(
        "LLAMA_API_KEY", "corral ls/ps/rm", "key sent to the router (the first of a comma list)"
    ),
    EnvVar("LLAMA_ARG_HOST", "corral ls/ps/rm", "host of the default `--url`"),
    EnvVar("LLAMA_ARG_PORT", "corral ls/ps/rm", "port of the default `--url`"),
    EnvVar("LLAMA_ARG_MODELS_DIR", "corral ls", "and `corral ls --models-dir`"),
    EnvVar("LLAMA_ARG_MODELS_PRESET", "corral ls", "and `corral ls --models-preset`"),
    EnvVar(
        "LLAMA_SERVER_DEBUG_FAKE_TIMING",
        "corral serve",
        "non-empty: every load and every proxied request waits 2 s (deterministic client tests, "
        "as upstream's router; not in single-model mode, as a single-model llama-server)",
    ),
    EnvVar(
        "LLAMA_MEDIA_MARKER",
        "workers",
        "the media marker of `/completion` prompts (default: random per worker, shown in "
        "`/props` as `media_marker`)",
    ),
    EnvVar(
        "AIP_MODE",
        "workers",
        "`PREDICTION`: serve Vertex AI's `POST /predict`, as llama-server (docs/api.md)",
    ),
    EnvVar("AIP_PREDICT_ROUTE", "workers", "the path of Vertex AI's predict route (`/predict`)"),
    EnvVar("CORRAL_STREAM_MAX_BYTES", "workers", "resumable stream ring size (default 4194304)"),
    EnvVar(
        "CORRAL_STREAM_TTL_SECONDS",
        "workers",
        "how long a finished resumable stream is kept (default 300)",
    ),
    EnvVar(
        "CORRAL_STREAM_GC_SECONDS", "workers", "how often expired streams are swept (default 60)"
    ),
    EnvVar(
        "RAY_ADDRESS",
        "corral serve",
        "`--cluster ray`: the Ray cluster to join (docs/scaling.md)",
    ),
    EnvVar(
        "CORRAL_NODE_MEMORY_MAX",
        "node agents (`--cluster`)",
        "in a node's `ray start` environment: the most Corral's workers may hold there, a size "
        "such as `48G` (docs/scaling.md)",
    ),
    EnvVar(
        "CORRAL_ROUTER_PID",
        "workers, download processes",
        "internal: set by the router; a child with it dies with the router",
    ),
    EnvVar(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "corral serve",
        "the whole OTLP/HTTP traces URL; turns tracing on, and wins over `--otel-endpoint` "
        "(docs/operations.md, Traces)",
    ),
    EnvVar(
        "OTEL_SDK_DISABLED",
        "corral serve",
        "`true`: no traces, whatever endpoint is set; the SDK's other `OTEL_*` variables are "
        "read by the SDK itself (docs/operations.md, Traces)",
    ),
    EnvVar("OTEL_TRACES_EXPORTER", "corral serve", "`none`: no traces, as `OTEL_SDK_DISABLED`"),
    EnvVar(
        "CORRAL_CMAKE_ARGS",
        "scripts/bootstrap.py",
        "extra CMake options for the llama-cpp-python build (later ones win), e.g. "
        "`-DCMAKE_CUDA_ARCHITECTURES=89`",
    ),
    EnvVar(
        "CORRAL_GPU",
        "scripts/bootstrap.py",
        "`cuda`, `vulkan` or `cpu`: the GPU back-end to build, instead of its own choice (CUDA "
        "with a CUDA toolkit and the NVIDIA driver, else the CPU)",
    ),
    EnvVar(
        "CUDA_HOME",
        "scripts/bootstrap.py",
        "a CUDA toolkit whose `bin/nvcc` is not on `PATH` (docs/operations.md, GPUs)",
    ),
    EnvVar("PYTHON", "serve.sh, test.sh", "the Python that runs bootstrap (default `python3`)"),
)

_HEADER = """\
# Configuration reference

<!-- Generated by scripts/gen_config_docs.py from the argparse parsers and
     router.catalogue.presets.OPTIONS; edit those (or the descriptions in the script), then run
     `.venv/bin/python scripts/gen_config_docs.py`. tests/docs fails when this file is stale. -->

Corral takes llama-server's spellings everywhere: a per-model option is the same word as a
`corral serve` flag, a `python -m worker` flag, a preset key and (mostly) a `LLAMA_ARG_*`
variable. Precedence for a model's options: **`corral serve` flag (or its variable) > preset
section > preset `[*]`**. Boolean values: `on|enabled|true|1|yes` and `off|disabled|false|0|no`
(`yes`/`no` are Corral's: llama.cpp itself does not take them).

Contents: [`corral serve`](#corral-serve) ·
[per-model options](#per-model-options) · [`python -m worker`](#python--m-worker) ·
[`corral pull/ls/rm/ps`](#corral-pulllsrmps) · [`corral rpc-server`](#corral-rpc-server) ·
[preset keys](#preset-keys) ·
[environment variables](#environment-variables)
"""

_PRESET_PROSE = """\
## Preset keys

`--models-preset FILE.ini` is llama.cpp's preset format: `[name]` sections, `[*]` for defaults
under every model of every source, `key = value` lines, `;` or `#` comments (a comment after a
value needs whitespace before it). A section named like a `--models-dir` or cache model
overrides it; any other section defines a new model and needs `model` or `hf-repo`. A key may
be written as any spelling below, without dashes; `no-` spellings invert the value
(`no-mmap = true` is `mmap = false`). A key llama-server accepts that is not below (`cache-reuse`,
`spec-draft-hf`, …) is left out with a one-line warning that it has no effect here, so a preset
written for llama-server loads. Setting one option twice in a section, any other unknown key
or a bad value stops startup (and a reload is refused) with a message naming file, section and
key. `version` is ignored. `[*]` may not set `model`, `mmproj`, `hf-repo`, `hf-file` or `alias`.
A commented example setting every key: [config/models.example.ini](../config/models.example.ini).

Kinds: **model** keys say which file and which names (never passed to workers), **preset** keys
are read by the router only, **worker** keys become worker flags (see
[per-model options](#per-model-options)).
"""


def _die(message: str) -> NoReturn:
    raise SystemExit(f"gen_config_docs: {message}")


@contextmanager
def _hermetic_environment() -> Iterator[None]:
    # Parsers read their defaults from the environment when built: show the code's defaults.
    prefixes = ("LLAMA_", "HF_", "HUGGING", "CORRAL_")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    with mock.patch.dict(os.environ, clean, clear=True):
        yield


def serve_parser() -> argparse.ArgumentParser:
    with _hermetic_environment():
        return _serve_parser()


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__()
        self.parser = parser


def worker_parser() -> argparse.ArgumentParser:
    """The parser ``parse_worker_args`` builds, caught just before it parses anything."""

    def capture(self: argparse.ArgumentParser, *_: Any, **__: Any) -> NoReturn:
        raise _Captured(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_args", capture):
        try:
            parse_worker_args([])
        except _Captured as caught:
            return caught.parser
    _die("parse_worker_args built no parser")


def _documented_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    # The worker's other llama-server flags are documented as one sentence, not one by one.
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction) and a.dest != "other_llama_server_flags"
    ]


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every flag spelling a parser accepts, the hidden ``--no-…`` ones included."""
    return {s for action in _documented_actions(parser) for s in action.option_strings}


def _code(items: Sequence[str]) -> str:
    return ", ".join(f"`{item}`" for item in items)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return lines


def _default(action: argparse.Action) -> str:
    default = action.default
    if default is None or default == [] or default is False:
        return "—" if not isinstance(action, argparse._StoreTrueAction) else "off"
    if default is True:
        return "on"
    if isinstance(default, float) and default.is_integer():
        default = int(default)
    return f"`{default}`"


def _flags(action: argparse.Action, negatives: Sequence[str] = ()) -> str:
    metavar: str | None = _METAVARS.get(action.dest) or str(action.metavar or action.dest.upper())
    if action.nargs == 0:  # store_true, store_const, BooleanOptionalAction
        metavar = None
    spellings = [s for s in action.option_strings if s not in negatives]
    text = " ".join(f"`{s}`" if metavar is None else f"`{s} {metavar}`" for s in spellings)
    if isinstance(action, argparse._AppendAction):
        text += " (repeatable)"
    return text


def _serve_section() -> list[str]:
    parser = serve_parser()
    model_dests = {"opt_" + spec.name.replace("-", "_") for spec in WORKER_OPTIONS}
    rows = []
    for action in _documented_actions(parser):
        if action.dest in model_dests or action.dest in ("no_effect_flags", SHORTCUT_DEST):
            continue  # per-model options, no-effect flags and shortcuts have their own tables
        if action.dest not in SERVE_FLAG_HELP:
            _die(f"corral serve flag {action.option_strings} has no description in SERVE_FLAG_HELP")
        env, meaning = SERVE_FLAG_HELP[action.dest]
        rows.append([_flags(action), f"`{env}`" if env else "—", _default(action), meaning])
    stale = set(SERVE_FLAG_HELP) - {a.dest for a in _documented_actions(parser)}
    if stale:
        _die(f"SERVE_FLAG_HELP describes flags corral serve does not have: {sorted(stale)}")
    return [
        "## `corral serve`",
        "",
        "`corral serve [flags]` runs the router (`./serve.sh` passes its arguments on). A flag "
        "beats its variable; repeatable flags take the variable only when the flag is absent. "
        "It also takes every [per-model option](#per-model-options) as a default for every "
        "model. SIGTERM or SIGINT stop it gracefully (every worker is stopped first); SIGHUP "
        "reloads the model sources.",
        "",
        *_table(["flag", "variable", "default", "meaning"], rows),
        "",
        *_shortcut_section(),
        *_no_effect_section(),
    ]


def _shortcut_section() -> list[str]:
    rows = [
        [
            f"`{flag}`",
            f"{shortcut.summary}: `{shortcut.model}`",
            f"`{shortcut.port}`",
            ", ".join(
                f"`{name} = {value}`"
                for name, value in shortcut.options.items()
                if find_option(name) is not None  # the ones Corral has an option for
            ),
        ]
        for flag, shortcut in SHORTCUTS.items()
    ]
    return [
        "### Model shortcuts",
        "",
        "llama-server's shortcuts: each adds its hub model as `-hf` would (downloaded through "
        "the download child unless cached; the tag picks the file llama-server's shortcut "
        "names) and sets the port and per-model options below, at its place on the command "
        "line: a flag after it beats them, one before it is overridden. Options Corral has no "
        "flag for yet are left out, and so is llama-server's `--cache-reuse 256` of the FIM "
        "models (no effect here).",
        "",
        *_table(["flag", "model", "port", "settings"], rows),
        "",
    ]


def _no_effect_section() -> list[str]:
    rows = [
        [
            " ".join(f"`{s}{' VALUE' * arity}`" for s in spellings),
            no_effect_reason(spellings[0]),
        ]
        for spellings, arity in no_effect_flags(serve_parser())
    ]
    return [
        "### Accepted, no effect yet",
        "",
        "llama-server flags that Corral accepts so that a llama-server command line starts, "
        "but does not act on: each is logged once at startup as having no effect (a flag "
        "shown with `VALUE` takes one). `python -m worker` accepts these and every other "
        "llama-server flag it has no use for the same way.",
        "",
        *_table(["flag", "why"], rows),
        "",
    ]


def _spellings(spec: OptionSpec) -> tuple[list[str], list[str]]:
    """(flag spellings, negative flag spellings) as the worker and ``corral serve`` take them."""
    env = ("LLAMA_ARG_", "__PRESET_")
    flags = option_flags(spec)
    negatives = [flag_spelling(s) for s in spec.negatives if not s.startswith(env)]
    return flags, negatives


# What a list's items are, where they are not files.
_LIST_ITEMS = {
    "rpc": "`HOST:PORT` items",
    "device": "device names",
    "spec-draft-device": "device names",
    "override-tensor": "`PATTERN=TYPE` items",
    "dry-sequence-breaker": "strings",
    "logit-bias": "`TOKEN_ID(+/-)BIAS` items",
}


def _values(spec: OptionSpec) -> str:
    if spec.name in _LIST_ITEMS:
        return f"{_LIST_ITEMS[spec.name]}, comma-separated"
    return KINDS[spec.kind].describe(spec)


def _worker_default(spec: OptionSpec) -> str:
    """The option's default as the table holds it (llama-server's), or what unset means."""
    if spec.no_effect is not None:
        return "—"
    if spec.name in _WRITTEN_DEFAULTS:
        return _WRITTEN_DEFAULTS[spec.name]
    if spec.name in _DEFAULT_MEANS:
        return _DEFAULT_MEANS[spec.name]
    if spec.default is None:
        return _NONE_MEANS.get(spec.name, "none" if KINDS[spec.kind].listed else "—")
    if KINDS[spec.kind].boolean:
        return "on" if spec.default in ("true", "on") else "off"
    return f"`{spec.default}`"


def _env_of(spec: OptionSpec) -> str | None:
    return next((s for s in spec.spellings if s.startswith("LLAMA_ARG_")), None)


def _model_options_section() -> list[str]:
    rows = []
    for spec in WORKER_OPTIONS:
        flags, negatives = _spellings(spec)
        metavar = "" if KINDS[spec.kind].takes == "switch" else " " + spec.kind.upper()
        text = " ".join(f"`{flag}{metavar}`" for flag in flags)
        if negatives:
            text += " / " + " ".join(f"`{negative}`" for negative in negatives)
        env = _env_of(spec)
        rows.append(
            [
                text,
                f"`{env}`" if env else "—",
                _values(spec),
                _worker_default(spec),
                spec.help,
            ]
        )
    return [
        "## Per-model options",
        "",
        "Flags of both `corral serve` (defaults for every model) and `python -m worker`, and "
        "keys of a preset section (without dashes). The variable is read by `corral serve` "
        "only, when the flag is absent; a worker reads nothing but its flags, since the router "
        "renders every option explicitly. `SWITCH` is `on`, `off` or `auto`.",
        "",
        *_table(["flags", "variable", "values", "default", "meaning"], rows),
        "",
    ]


def _plain_rows(
    parser: argparse.ArgumentParser, help_by_dest: dict[str, str], what: str
) -> list[list[str]]:
    rows = []
    for action in _documented_actions(parser):
        if isinstance(action, argparse._SubParsersAction):
            continue
        if action.dest not in help_by_dest:
            _die(f"{what} flag {action.option_strings or action.dest} has no description")
        name = _flags(action) if action.option_strings else f"`{action.dest.upper()}`"
        rows.append([name, _default(action), help_by_dest[action.dest]])
    return rows


def _worker_section() -> list[str]:
    parser = worker_parser()
    model_dests = {"opt_" + spec.name.replace("-", "_") for spec in WORKER_OPTIONS}
    own = [a for a in _documented_actions(parser) if a.dest not in model_dests]
    missing = [a.dest for a in own if a.dest not in WORKER_FLAG_HELP]
    if missing:
        _die(f"python -m worker flags without a description in WORKER_FLAG_HELP: {missing}")
    rows = [[_flags(a), _default(a), WORKER_FLAG_HELP[a.dest]] for a in own]
    return [
        "## `python -m worker`",
        "",
        "One model, served alone like a single-model llama-server (the router starts one per "
        "model): `.venv/bin/python -m worker --model models/SmolLM2-135M-Instruct.Q4_1.gguf "
        "--port 8081`. Besides these it takes every [per-model option](#per-model-options), and "
        "every other flag of llama-server's `--help`, each logged at startup as having no effect "
        "in a worker.",
        "",
        *_table(["flag", "default", "meaning"], rows),
        "",
    ]


_ROUTER_FLAGS = {
    "url": "the router to ask; default: `http://LLAMA_ARG_HOST:LLAMA_ARG_PORT`, as `corral serve` "
    "would listen in this environment (`0.0.0.0` → `127.0.0.1`); `HOST:PORT` without a scheme "
    "means `http://`",
    "api_key": "key for a router that wants one (else `LLAMA_API_KEY`); a 401 says which to set "
    "(`ls` too, then lists without statuses)",
}
_CACHE_COMMAND_HELP: dict[str, dict[str, str]] = {
    "pull": {
        "model": "`org/repo[:TAG]`; no tag: `Q4_K_M`, else `Q8_0`, else the first GGUF",
        "hf_token": "hub token (else `HF_TOKEN`)",
    },
    "ls": {
        "models_dir": "also list this directory's models (else `LLAMA_ARG_MODELS_DIR`)",
        "models_preset": "also list this preset file's models (else `LLAMA_ARG_MODELS_PRESET`)",
        **_ROUTER_FLAGS,
    },
    "rm": {
        "model": "`org/repo:TAG`: that tag's files; blobs nothing else uses",
        "force": "delete even while the router at `--url` serves the model (without it: a "
        "question on a terminal, a refusal otherwise)",
        **_ROUTER_FLAGS,
    },
    "ps": _ROUTER_FLAGS,
    "top": {
        **_ROUTER_FLAGS,
        "interval": "seconds between refreshes",
        "once": "print one screen and exit (for scripts)",
    },
}
_CACHE_COMMAND_SUMMARY = {
    "pull": "download into the hub cache, with a progress bar, speed and time left; resumes a "
    "partial download",
    "ls": "every model a router would list: the hub cache, `--models-dir` and `--models-preset` "
    "models, with source, size and path, and each one's status when a router answers at `--url`",
    "rm": "delete one model's files from the hub cache; when the router at `--url` is serving it, "
    "only after a confirmation (or `--force`)",
    "ps": "the models a running router has loaded, with each worker's resident memory (and its "
    "node, with `--cluster`)",
    "top": "a running router's activity, live in the terminal (`q` ends it): models with their "
    "tokens/s and memory, each device's memory, the requests and their states, the models' "
    "last loads and evictions; over SSH too ([operations.md](operations.md#activity))",
}


def _cache_commands_section() -> list[str]:
    with _hermetic_environment():
        parser = _cache_commands_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if set(subparsers.choices) != set(_CACHE_COMMAND_HELP):
        _die(f"corral subcommands changed: {sorted(subparsers.choices)}")
    lines = [
        "## `corral pull/ls/rm/ps`",
        "",
        "They work on the hub cache directly (found as in [environment variables]"
        "(#environment-variables)), with or without a router; a running router sees their "
        "changes at its next reload (`GET /models?reload=1` or SIGHUP). `ps` and `top` ask a "
        "router.",
        "",
    ]
    for command, sub in subparsers.choices.items():
        rows = _plain_rows(sub, _CACHE_COMMAND_HELP[command], f"corral {command}")
        lines += [f"- **`corral {command}`**: {_CACHE_COMMAND_SUMMARY[command]}."]
        if rows:
            lines += [
                "",
                *("  " + line for line in _table(["argument", "default", "meaning"], rows)),
            ]
        lines.append("")
    return lines


_RPC_SERVER_HELP = {
    "host": "IPv4 address to listen on; one that is not loopback needs `--allow-remote`",
    "port": "TCP port to listen on (llama.cpp's rpc-server default)",
    "threads": "CPU threads of the CPU device (default: the physical cores, as a worker's)",
    "mem": "accepted with a warning and no effect: this llama.cpp's RPC server takes no memory "
    "figure, each device offers its own free memory (docs/scaling.md)",
    "allow_remote": "listen on a non-loopback address: the RPC protocol has no authentication, "
    "so only on a trusted network (docs/scaling.md)",
}


def _rpc_server_section() -> list[str]:
    rows = _plain_rows(rpc_server_parser(), _RPC_SERVER_HELP, "corral rpc-server")
    return [
        "## `corral rpc-server`",
        "",
        "ggml's RPC server from the worker's llama.cpp build: offers this machine's devices "
        "(its GPUs, else its CPU) to a worker elsewhere started with `--rpc HOST:PORT` "
        "([scaling.md](scaling.md#one-model-across-machines-ggml-rpc)). It always warns that "
        "the protocol has no authentication; SIGINT or SIGTERM stop it.",
        "",
        *_table(["flag", "default", "meaning"], rows),
        "",
    ]


def _preset_section() -> list[str]:
    rows = []
    for spec in OPTIONS:
        if not spec.help:
            _die(f"option '{spec.name}' has no description (its row's help)")
        others = [s for s in spec.spellings]
        negatives = list(spec.negatives)
        rows.append(
            [
                f"`{spec.name}`",
                _code(others) if others else "—",
                _code(negatives) if negatives else "—",
                spec.role,
                _values(spec),
                spec.help,
            ]
        )
    return [
        _PRESET_PROSE,
        *_table(
            ["key", "other spellings", "negative spellings", "kind", "values", "meaning"], rows
        ),
        "",
    ]


def _environment_section() -> list[str]:
    cache_variables = [name for name, _ in CACHE_DIR_VARIABLES]
    found: list[EnvVar] = []
    for action in _documented_actions(serve_parser()):
        env = SERVE_FLAG_HELP.get(action.dest, ("", ""))[0]
        if env:
            flag = max((s for s in action.option_strings if not s.startswith("--no-")), key=len)
            found.append(EnvVar(env, "corral serve", f"`{flag}` when the flag is absent"))
    found.append(
        EnvVar("LLAMA_ARG_NO_MODELS_AUTOLOAD", "corral serve", "`--no-models-autoload`, if set")
    )
    for spec in WORKER_OPTIONS:
        if env_name := _env_of(spec):
            found.append(EnvVar(env_name, "corral serve", f"`--{spec.name}` for every model"))
        for negative in spec.negatives:
            if negative.startswith("LLAMA_ARG_NO_"):
                flag = f"`--{spec.negatives[0]}` for every model, if set"
                found.append(EnvVar(negative, "corral serve", flag))
    merged: dict[str, tuple[list[str], list[str]]] = {}
    for variable in [*found, *ENVIRONMENT]:
        readers, meanings = merged.setdefault(variable.name, ([], []))
        readers.append(variable.read_by)
        meanings.append(variable.meaning)
    rows = [
        [f"`{name}`", ", ".join(readers), "; ".join(meanings)]
        for name, (readers, meanings) in merged.items()
    ]
    return [
        "## Environment variables",
        "",
        "The hub cache is the first set of "
        + ", ".join(f"`{name}`" for name in cache_variables)
        + " (with `hub`, `huggingface/hub` or `.cache/huggingface/hub` appended to the last "
        "three), as llama.cpp finds it. These never reach a child process: "
        + ", ".join(f"`{name}`" for name in sorted(SECRET_ENV))
        + "; download processes get the hub token back as `HF_TOKEN`, workers never. As "
        "upstream, a `LLAMA_ARG_NO_*` variable turns its option off whatever its value (even "
        "`0`) and wins over the positive one.",
        "",
        *_table(["variable", "read by", "meaning"], rows),
        "",
    ]


def render() -> str:
    lines = [
        _HEADER,
        *_serve_section(),
        *_model_options_section(),
        *_worker_section(),
        *_cache_commands_section(),
        *_rpc_server_section(),
        *_preset_section(),
        *_environment_section(),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render docs/configuration.md from the code.")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is out of date: run scripts/gen_config_docs.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
