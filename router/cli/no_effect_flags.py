"""Why each llama-server flag Corral accepts but does not act on has no effect.

Which flags those are is derived (:mod:`router.cli.no_effect`): every flag of llama-server's
``--help`` (the generated :mod:`corral.options.llama_server_flags`) that neither the option
table nor the router's own flags implement. Only the reasons are written here, keyed by the
spelling the notice and docs/configuration.md name the flag by (a negative flag is noted apart,
by its own spelling); a flag that comes to take effect loses its line, and a test fails while
a no-effect flag has no reason or a reason names no such flag.
"""

from __future__ import annotations

__all__ = ["GROUP_REASONS", "NO_EFFECT_REASONS"]

_STRICT = "llama-cpp-python pins no thread to one CPU: -C/-Cr give every thread the whole set"
_POLL = "llama-cpp-python sets no polling level: ggml's OpenMP threads spin a bounded while"
_BATCH = "llama-cpp-python runs one thread pool: -C/-Cr/--prio apply to it"
_LOGS = "Corral logs through its own structured log (`--log-format`, `--log-requests`)"
_CPU = "sampling runs on the CPU here"
NO_EFFECT_REASONS: dict[str, str] = {
    "--props": "`POST /props` is refused: settings are per model, set by flags or a preset",
    "--backend-sampling": _CPU,
    # CORS is answered as docs/operations.md says: never with credentials, the headers a
    # preflight asks for, llama-server's methods.
    **dict.fromkeys(
        ("--cors-methods", "--cors-headers", "--cors-credentials", "--no-cors-credentials"),
        "CORS is answered as docs/operations.md says: never with credentials",
    ),
    "--no-spec-draft-backend-sampling": _CPU,
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
# The reason of a flag NO_EFFECT_REASONS does not name, by the start of its spelling.
GROUP_REASONS: dict[str, str] = {
    "--spec-": "speculative tuning that llama-cpp-python's API or the types Corral runs ignore",
}
