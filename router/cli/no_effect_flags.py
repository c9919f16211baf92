"""llama-server flags Corral accepts but does not implement yet.

A single-model llama-server command line carries flags such as ``--threads-http 4`` or
``--poll 50``; refusing them at startup would make Corral no drop-in. Each is parsed with
its arity, so a value-taking flag consumes its value instead of leaving it to be read as something
else, and the router logs one notice per flag saying that it has no effect here (docs/serving.md).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from corral.options.flags import NotedFlag
from corral.options.llama_server_flags import LLAMA_SERVER_FLAGS

__all__ = ["NO_EFFECT_FLAGS", "add_no_effect_flags", "no_effect_given", "no_effect_reason"]

# (spellings as llama-server's common/arg.cpp spells them, the first one named in the notice;
# how many values the flag takes).
NO_EFFECT_FLAGS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("--verbosity", "-lv", "--log-verbosity"), 1),
    (("--props",), 0),
    # Sampling runs on the CPU here; llama.cpp's own tests spell it with an underscore.
    (("--backend-sampling", "-bs", "--backend_sampling"), 0),
    # CORS is answered as docs/operations.md says: never with credentials, the headers a
    # preflight asks for, llama-server's methods.
    (("--cors-methods",), 1),
    (("--cors-headers",), 1),
    (("--cors-credentials",), 0),
    (("--no-cors-credentials",), 0),
    (("--spec-draft-p-split", "--draft-p-split"), 1),
    # Speculative tuning that llama-cpp-python's API or the types Corral runs have no use for.
    (("--spec-draft-threads-batch", "-tbd", "--threads-batch-draft"), 1),
    (("--spec-draft-cpu-mask", "-Cd", "--cpu-mask-draft"), 1),
    (("--spec-draft-cpu-range", "-Crd", "--cpu-range-draft"), 1),
    (("--spec-draft-cpu-strict", "--cpu-strict-draft"), 1),
    (("--spec-draft-prio", "--prio-draft"), 1),
    (("--spec-draft-poll", "--poll-draft"), 1),
    (("--spec-draft-cpu-mask-batch", "-Cbd", "--cpu-mask-batch-draft"), 1),
    (("--spec-draft-cpu-range-batch", "-Crbd", "--cpu-range-batch-draft"), 1),
    (("--spec-draft-cpu-strict-batch", "--cpu-strict-batch-draft"), 1),
    (("--spec-draft-prio-batch", "--prio-batch-draft"), 1),
    (("--spec-draft-poll-batch", "--poll-batch-draft"), 1),
    (("--spec-draft-type-k", "-ctkd", "--cache-type-k-draft"), 1),
    (("--spec-draft-type-v", "-ctvd", "--cache-type-v-draft"), 1),
    (("--spec-draft-override-tensor", "-otd", "--override-tensor-draft"), 1),
    (("--spec-draft-n-cpu-moe", "--spec-draft-ncmoe", "-ncmoed", "--n-cpu-moe-draft"), 1),
    (("--spec-draft-backend-sampling",), 0),
    (("--no-spec-draft-backend-sampling",), 0),
    (("--spec-ngram-simple-min-hits",), 1),
    # llama-server flags (issue 29); why each has no effect is in NO_EFFECT_REASONS.
    (("--completion-bash",), 0),
    (("--cpu-strict",), 1),
    (("--poll",), 1),
    (("-Cb", "--cpu-mask-batch"), 1),
    (("-Crb", "--cpu-range-batch"), 1),
    (("--cpu-strict-batch",), 1),
    (("--prio-batch",), 1),
    (("--poll-batch",), 1),
    (("--perf",), 0),
    (("--no-perf",), 0),
    (("-e", "--escape"), 0),
    (("--no-escape",), 0),
    (("-sp", "--special"), 0),
    (("--repack",), 0),
    (("-nr", "--no-repack"), 0),
    (("--no-host",), 0),
    (("-dt", "--defrag-thold"), 1),
    (("-cb", "--cont-batching"), 0),
    (("-nocb", "--no-cont-batching"), 0),
    (("-mmu", "--mmproj-url"), 1),
    (("--video-fps",), 1),
    (("--video-timestamp-interval",), 1),
    (("--video-ffmpeg-dir",), 1),
    (("-lm", "--load-mode"), 1),
    (("-lzm", "--lazy-mode"), 1),
    (("-mu", "--model-url"), 1),
    (("-dr", "--docker-repo"), 1),
    (("--tools-runtime",), 1),
    (("-ag", "--agent"), 0),
    (("-no-ag", "--no-agent"), 0),
    (("--threads-http",), 1),
    (("--skip-chat-parsing",), 0),
    (("--no-skip-chat-parsing",), 0),
    (("-sps", "--slot-prompt-similarity"), 1),
    (("--log-disable",), 0),
    (("--log-file",), 1),
    (("--log-jsonl",), 0),
    (("--no-log-jsonl",), 0),
    (("--log-prompts-dir",), 1),
    (("--log-colors",), 1),
    (("--log-prefix",), 0),
    (("--no-log-prefix",), 0),
    (("--log-timestamps",), 0),
    (("--no-log-timestamps",), 0),
    (("--spec-ngram-size-n",), 1),
    (("--spec-ngram-size-m",), 1),
    (("--spec-ngram-min-hits",), 1),
)
_NOT_YET = "not implemented yet"
_STRICT = "llama-cpp-python pins no thread to one CPU: -C/-Cr give every thread the whole set"
_POLL = "llama-cpp-python sets no polling level: ggml's OpenMP threads spin a bounded while"
_BATCH = "llama-cpp-python runs one thread pool: -C/-Cr/--prio apply to it"
_LOGS = "Corral logs through its own structured log (`--log-format`, `--log-requests`)"
# Why a flag has no effect, by its first spelling (docs/configuration.md shows it).
NO_EFFECT_REASONS: dict[str, str] = {
    # Flags listed before this issue.
    "--verbosity": "Corral logs at info; `--verbose` adds llama-server's debug object to answers",
    "--props": "`POST /props` is refused: settings are per model, set by flags or a preset",
    "--backend-sampling": "sampling runs on the CPU here",
    **dict.fromkeys(
        ("--cors-methods", "--cors-headers", "--cors-credentials", "--no-cors-credentials"),
        "CORS is answered as docs/operations.md says: never with credentials",
    ),
    "--no-spec-draft-backend-sampling": "sampling runs on the CPU here",
    "--completion-bash": "`corral serve --help` lists every flag",
    "--cpu-strict": _STRICT,
    "--poll": _POLL,
    **dict.fromkeys(("-Cb", "-Crb", "--cpu-strict-batch", "--prio-batch", "--poll-batch"), _BATCH),
    **dict.fromkeys(("--perf", "--no-perf"), "timings are always measured and answered"),
    **dict.fromkeys(("-e", "--no-escape"), "llama-server's CLI prompt escapes: no CLI prompt here"),
    "-sp": "special tokens follow each request's own fields",
    **dict.fromkeys(("--repack", "-nr", "--no-host"), "CPU buffer types are llama.cpp's defaults"),
    "-dt": "llama.cpp no longer defragments (upstream's flag is deprecated too)",
    **dict.fromkeys(("-cb", "-nocb"), "batching across slots is always on"),
    **dict.fromkeys(("-mmu", "-mu", "-dr"), "models come from the hub cache, `-m` or `-hf`"),
    "--video-fps": "no video input yet",
    **dict.fromkeys(("--video-timestamp-interval", "--video-ffmpeg-dir"), "no video input yet"),
    **dict.fromkeys(("-lm", "-lzm"), "models load with mmap unless `--no-mmap`"),
    "--tools-runtime": "built-in tools run in the router (docs/tools.md)",
    **dict.fromkeys(("-ag", "-no-ag"), "no agent loop in the server; clients run their own"),
    "--threads-http": "the router serves HTTP on one event loop: there is no HTTP thread pool",
    **dict.fromkeys(
        ("--skip-chat-parsing", "--no-skip-chat-parsing"), "answers are always parsed (tool calls)"
    ),
    "-sps": "a request goes to the slot whose cache shares most of its prompt",
    **dict.fromkeys(("--log-disable", "--log-file", "--log-jsonl", "--no-log-jsonl"), _LOGS),
    **dict.fromkeys(("--log-prompts-dir", "--log-colors", "--log-prefix"), _LOGS),
    **dict.fromkeys(("--no-log-prefix", "--log-timestamps", "--no-log-timestamps"), _LOGS),
    **dict.fromkeys(
        ("--spec-ngram-size-n", "--spec-ngram-size-m", "--spec-ngram-min-hits"),
        "older names of the `--spec-ngram-*` settings",
    ),
}
_DEST = "no_effect_flags"
# llama-server's variable of each flag, by every spelling.
_VARIABLES = {s: flag.env for flag in LLAMA_SERVER_FLAGS if flag.env for s in flag.spellings}


def no_effect_reason(first_spelling: str) -> str:
    """Why a no-effect flag has none (docs/configuration.md)."""
    if first_spelling in NO_EFFECT_REASONS:
        return NO_EFFECT_REASONS[first_spelling]
    if first_spelling.startswith("--spec-"):
        return "speculative tuning that llama-cpp-python's API or the types Corral runs ignore"
    return _NOT_YET


def add_no_effect_flags(parser: argparse.ArgumentParser) -> None:
    # Listed in the group's text rather than one line each: they share one meaning.
    listed = ", ".join(s[0] + (" VALUE" if arity else "") for s, arity in NO_EFFECT_FLAGS)
    group = parser.add_argument_group(
        "accepted for llama-server compatibility, no effect yet",
        f"{listed} (each logged once at startup as having no effect; docs/serving.md)",
    )
    for spellings, arity in NO_EFFECT_FLAGS:
        group.add_argument(
            *spellings,
            dest=_DEST,
            action=NotedFlag,
            nargs=arity or 0,
            metavar="VALUE" if arity else None,
            default=[],
            help=argparse.SUPPRESS,
        )


def no_effect_given(
    args: argparse.Namespace, env: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The no-effect flags the command line gave, by first spelling, in the order given; then
    those whose llama-server variable is set (``LLAMA_ARG_THREADS_HTTP``), as ``FLAG (VAR)``."""
    env = os.environ if env is None else env
    given: list[str] = list(getattr(args, _DEST, None) or ())
    for spellings, _ in NO_EFFECT_FLAGS:
        variable = _VARIABLES.get(spellings[0])
        if variable is not None and variable in env and spellings[0] not in given:
            given.append(f"{spellings[0]} ({variable})")
    return tuple(given)
