"""``corral serve``'s flags: one row a flag, with its help, its variable and the setting it fills.

:data:`SERVE_FLAGS` is the one table (the security, tools and logging rows are in
:mod:`router.cli.access_flags`); :mod:`router.cli.serve_flag` says what a row's fields mean. A
row's ``dest`` is the :class:`~router.settings.ServeSettings` field it fills (whose default is
the row's) or the name a derivation of :mod:`router.settings` reads it by. Flags are spelled as
llama-server's, with ``LLAMA_ARG_*`` fallbacks read when the parser is built.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from corral.options.flags import add_model_flags
from router.cli.access_flags import ACCESS_FLAGS
from router.cli.help import SuggestingParser, add_help_flags
from router.cli.list_devices import ListDevices
from router.cli.no_effect import add_no_effect_flags
from router.cli.serve_flag import (
    CompletionBash,
    MmprojAuto,
    PrintAndExit,
    ServeFlag,
    add_serve_flags,
    at_least_zero,
    cluster_address,
    directory,
    existing_file,
    existing_files,
    names,
    route_prefix,
    size,
)
from router.cli.shortcuts import add_shortcut_flags

__all__ = ["SERVE_FLAGS", "serve_parser"]

_ON_OFF = argparse.BooleanOptionalAction
_SECONDS = at_least_zero("0 (never) or a number of seconds")
_SERVER = (
    ServeFlag(
        "server",
        ("--host",),
        "host",
        "listen address; beyond loopback, also set an API key",
        "LLAMA_ARG_HOST",
        "127.0.0.1",
        "HOST",
    ),
    ServeFlag(
        "server",
        ("--port",),
        "port",
        "listen port; `0` picks a free one (the log says which)",
        "LLAMA_ARG_PORT",
        8080,
        "PORT",
        convert=int,
    ),
    ServeFlag(
        "server",
        ("-to", "--timeout"),
        "timeout",
        "longest silence (seconds) from a worker within one response",
        "LLAMA_ARG_TIMEOUT",
        3600.0,
        "SECONDS",
        convert=float,
    ),
    ServeFlag(
        "server",
        ("--stall-timeout",),
        "stall_timeout",
        "kill a worker with requests in flight that shows no progress (no bytes, no answer to "
        "a liveness probe) for this many seconds; its requests fail with 503, the model shows "
        "`failed` with reason `stalled` (`0`: never)",
        "CORRAL_STALL_TIMEOUT",
        60.0,
        "SECONDS",
        convert=float,
        setting=_SECONDS,
    ),
    ServeFlag(
        "server",
        ("--load-timeout",),
        "load_timeout",
        "kill a loading worker that reports no progress for this many seconds; reason "
        "`load_stalled` (`0`: never)",
        "CORRAL_LOAD_TIMEOUT",
        600.0,
        "SECONDS",
        convert=float,
        setting=_SECONDS,
    ),
    ServeFlag(
        "server",
        ("--max-queue",),
        "max_queue",
        "requests that may wait for model loads (and, with `--schedule swap`, for a model's "
        "slots) at once, all models together, one caller (a key) holding at most a quarter "
        "of them; more are refused with 503 and `Retry-After` (`0`: no limit)",
        "CORRAL_MAX_QUEUE",
        512,
        "N",
        convert=int,
        setting=at_least_zero("0 (no limit) or a number of requests"),
    ),
    # llama-server flags (issue 29).
    ServeFlag(
        "server",
        ("--version",),
        "version",
        "print Corral's version and llama.cpp's (its commit and llama-cpp-python's release), "
        "and exit; `corral --version` too",
        action=PrintAndExit,
        nargs=0,
        exits=True,
    ),
    ServeFlag(
        "models",
        ("-cl", "--cache-list"),
        "cache_list",
        "list the hub cache's models (as `corral ls`) and exit",
        action=PrintAndExit,
        nargs=0,
        exits=True,
    ),
    ServeFlag(
        "server",
        ("--completion-bash",),
        "completion_bash",
        "print Corral's bash completion script (every command and flag) and exit: redirect it "
        "into a file that bash sources",
        action=CompletionBash,
        nargs=0,
        reads_variable=False,
        exits=True,
    ),
    ServeFlag(
        "server",
        ("--api-prefix",),
        "api_prefix",
        "serve every route under this path (`/v2`: `/v2/health`, `/v2/v1/models`, the Web UI "
        "at `/v2/`); any other path is 404",
        "LLAMA_ARG_API_PREFIX",
        "",
        "PREFIX",
        setting=route_prefix,
    ),
    ServeFlag(
        "server",
        ("--path",),
        "static_path",
        "serve the files of this directory (`/` is its `index.html`) ahead of the routes, as "
        "llama-server's `--path`; paths leading out of it are not served",
        "LLAMA_ARG_STATIC_PATH",
        metavar="DIR",
        convert=Path,
        setting=directory,
    ),
    ServeFlag(
        "server",
        ("--reuse-port",),
        "reuse_port",
        "listen with `SO_REUSEPORT`, so that other processes may listen on the same port",
        "LLAMA_ARG_REUSE_PORT",
        False,
        action="store_true",
    ),
)
# A model shortcut (router/cli/shortcuts.py) adds its model to this row's list.
_HF_REPO = ServeFlag(
    "models",
    ("-hf", "-hfr", "--hf-repo"),
    "hf_repos",
    "load this hub model (`org/repo[:TAG]`) at startup, downloading it first (with "
    "progress on stderr) when it is not in the hub cache; with `--offline` it must be there; "
    "a repository with a root `preset.ini` is served as that preset (remote preset)",
    "LLAMA_ARG_HF_REPO",
    metavar="ORG/REPO[:TAG]",
    action="append",
    reads_variable=False,
)
_MODELS = (
    ServeFlag(
        "models",
        ("--models-dir",),
        "models_dir",
        "directory of models: each top-level `*.gguf` is a model named by its stem, each "
        "subdirectory one model (first shard of a split model; `mmproj`/`draft` files are not "
        "models)",
        "LLAMA_ARG_MODELS_DIR",
        metavar="DIR",
        convert=Path,
        setting=directory,
    ),
    ServeFlag(
        "models",
        ("-m", "--model"),
        "model_files",
        "add this GGUF as a model named by its stem and load it at startup",
        default=[],
        metavar="FILE",
        convert=Path,
        setting=existing_files,
        action="append",
    ),
    _HF_REPO,
    ServeFlag(
        "models",
        ("-mm", "--mmproj"),
        "mmproj_file",
        "multimodal projector for the `-m` models (images, audio); hub and `--models-dir` "
        "models find theirs beside them",
        "LLAMA_ARG_MMPROJ",
        metavar="FILE",
        convert=Path,
    ),
    ServeFlag(
        "models",
        ("--mmproj-auto", "--no-mmproj", "--no-mmproj-auto"),
        "mmproj_auto",
        "pair models with the projector found beside them (hub cache, `--models-dir`); "
        "`--no-mmproj` (or the preset key `no-mmproj`) turns it off, a named `mmproj` still "
        "loads",
        "LLAMA_ARG_MMPROJ_AUTO",
        action=MmprojAuto,
        nargs=0,
        reads_variable=False,
    ),
    ServeFlag(
        "models",
        ("-hff", "--hf-file"),
        "hf_file",
        "with one `-hf REPO`: serve this file of it (a path in the repository), as "
        "llama-server; it must be in the hub cache",
        metavar="FILE",
    ),
    ServeFlag(
        "models",
        ("--models-preset",),
        "models_preset",
        "preset INI file (see Preset keys)",
        "LLAMA_ARG_MODELS_PRESET",
        metavar="FILE",
        convert=Path,
        setting=existing_file,
    ),
    ServeFlag(
        "models",
        ("-a", "--alias"),
        "aliases",
        "single-model mode: names of the one model, comma-separated; as llama-server, the "
        "first in sorted order is its id and all of them its `aliases`; with several models "
        "it has no effect (a preset's `alias` key names them)",
        "LLAMA_ARG_ALIAS",
        metavar="NAME[,NAME…]",
        setting=names,
    ),
    ServeFlag(
        "models",
        ("--tags",),
        "tags",
        "single-model mode: tags of the one model, comma-separated (listed as its `tags`); "
        "with several models it has no effect",
        "LLAMA_ARG_TAGS",
        metavar="TAG[,TAG…]",
        setting=names,
    ),
    ServeFlag(
        "models",
        ("--models-max",),
        "models_max",
        "models loading, loaded or sleeping at once (downloads do not count); `<= 0`: unlimited",
        "LLAMA_ARG_MODELS_MAX",
        4,
        "N",
        convert=int,
    ),
    ServeFlag(
        "models",
        ("--models-memory-max",),
        "models_memory_max",
        "Corral: memory the running models may hold (`512M`, `24G`; K/M/G/T are powers of "
        "1024); idle models are evicted, least recent first, until a new one fits. A model's "
        "size is its preset `memory`, else the most its worker was seen to hold, else an "
        "estimate (files, KV cache, process); a model alone always loads",
        "CORRAL_MODELS_MEMORY_MAX",
        metavar="SIZE",
        shown="no limit",
        setting=size,
    ),
    ServeFlag(
        "models",
        ("--models-spare",),
        "models_spare",
        "Corral: spare workers kept started (imports done, no model) for the next load to "
        "take; never listed, never counted as a model; `0`: none",
        "CORRAL_MODELS_SPARE",
        1,
        "N",
        convert=int,
        setting=at_least_zero("0 (no spare worker) or a number of workers"),
    ),
    ServeFlag(
        "models",
        ("--schedule",),
        "schedule",
        "Corral: the order waiting requests are served in. `swap`: a loaded model's requests "
        "before a swap, interactive before batch (the key file's `class=`), keys sharing by "
        "tokens served, none waiting past `--schedule-wait-max`; `fifo`: llama.cpp's router's "
        "strict arrival order",
        "CORRAL_SCHEDULE",
        "swap",
        choices=("swap", "fifo"),
    ),
    ServeFlag(
        "models",
        ("--schedule-wait-max",),
        "schedule_wait_max",
        "Corral: seconds a request waits before it goes ahead of every other (`--schedule "
        "swap`): running models then take no new request until one is idle and evicted for "
        "it; batch requests go ahead of interactive ones too (`0`: never)",
        "CORRAL_SCHEDULE_WAIT_MAX",
        30.0,
        "SECONDS",
        convert=float,
        setting=at_least_zero("0 (no bound) or a number of seconds"),
    ),
    ServeFlag(
        "models",
        ("--schedule-keep-idle",),
        "schedule_keep_idle",
        "Corral: seconds a person's idle model is kept loaded against waiting batch work after "
        "their last interactive turn (`--schedule swap`); past it the model is batch's until "
        "they come back, when it goes ahead of batch again (`0`: given up at once)",
        "CORRAL_SCHEDULE_KEEP_IDLE",
        15.0,
        "SECONDS",
        convert=float,
        setting=at_least_zero("0 (given up at once) or a number of seconds"),
    ),
    ServeFlag(
        "models",
        ("--models-autoload",),
        "models_autoload",
        "load a model on its first request (per request: `?autoload=true|false`)",
        "LLAMA_ARG_MODELS_AUTOLOAD",
        True,
        action=_ON_OFF,
        off_variable="LLAMA_ARG_NO_MODELS_AUTOLOAD",
    ),
    ServeFlag(
        "models",
        ("--offline",),
        "offline",
        "no implicit downloads: `-hf` must name a cached model; an explicit `POST /models` "
        "still downloads, as in llama-server",
        "LLAMA_ARG_OFFLINE",
        False,
        action="store_true",
    ),
    # GPU (issue 26): prints a worker's devices and exits.
    ServeFlag(
        "models",
        ("--list-devices",),
        "list_devices",
        "print the GPU devices a worker sees (ggml's, with their memory), as llama-server's "
        "`--list-devices`, then exit",
        nargs=0,
        action=ListDevices,
        reads_variable=False,
        exits=True,
    ),
    ServeFlag(
        "models",
        ("-hft", "--hf-token"),
        "hf_token",
        "hub token for downloads (else `HF_TOKEN`, else `HUGGING_FACE_HUB_TOKEN`); given to "
        "download processes only, never to workers",
        "HF_TOKEN",
        metavar="TOKEN",
        reads_variable=False,
    ),
    ServeFlag(
        "models",
        ("--cluster",),
        "cluster",
        "Corral: place workers on the nodes of a running Ray cluster (docs/scaling.md). `ray`: "
        "the cluster `RAY_ADDRESS` names, else the one started on this machine; "
        "`ray://HOST:PORT`: the head's address as `ray start --address` takes it. Needs the "
        "`corral[cluster]` extra",
        "CORRAL_CLUSTER",
        metavar="ray[://ADDRESS]",
        shown="none: this machine only",
        setting=cluster_address,
    ),
)
SERVE_FLAGS: tuple[ServeFlag, ...] = (*_SERVER, *_MODELS, *ACCESS_FLAGS)


def serve_parser() -> SuggestingParser:
    parser = SuggestingParser(
        prog="corral serve",
        description="Serve every local model behind one OpenAI-compatible address.",
        epilog="Every flag: docs/configuration.md. A flag beats its [VARIABLE].",
        add_help=False,  # a brief --help, and --help-all
    )
    add_help_flags(parser)
    add_serve_flags(parser, SERVE_FLAGS)
    add_model_flags(parser)
    add_shortcut_flags(parser, _HF_REPO.dest)
    add_no_effect_flags(parser)
    return parser
