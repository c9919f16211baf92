"""What a saved KV cache belongs to: the model file and every setting that shapes the cache.

A saved sequence state is only valid for the same weights and the same cache layout
(docs/serving.md, "KV cache across restarts"). The key is computed from all of a worker's
settings except those known to leave the cache alone, so a setting added later (an adapter, a
draft model) changes the key until someone decides it does not: a new setting can cost a
cache miss, never a wrong restore.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from importlib.metadata import version
from typing import Any

from worker.settings.worker_settings import WorkerSettings

__all__ = ["LABEL", "CacheKey", "cache_key"]

# Settings that change neither the cache's layout nor its contents for a given token list.
_NOT_IN_KEY = frozenset(
    {
        "model",  # replaced by the file's identity below
        "alias",
        "tags",
        "host",
        "port",
        "api_keys",  # a secret: never in a key written beside the caches
        "cors_origins",
        "allowed_hosts",
        "threads",
        "threads_batch",
        "batch_size",
        "ubatch_size",
        "n_gpu_layers",
        "n_predict",
        # Sampling's request defaults, and which options were given (for the GGUF's own
        # sampling defaults): what is generated, not what is cached.
        "sampling",
        "options_given",
        "chat_template",
        "use_mmap",
        "use_mlock",
        "sleep_idle_seconds",
        "embeddings",
        "pooling",
        "reranking",
        "endpoint_slots",
        "slot_save_path",
        "media_path",
        "media_allow_private",
        "media_max_bytes",
        "kv_persist",
        "kv_cache_dir",
        "kv_cache_max",
        "ignored",
        "no_effect_flags",
        "grammar",
        "json_schema",
        "reverse_prompt",
        "ui_settings",
        "sse_ping_interval",
        "embd_normalize",
        "check_tensors",
        "cache_prompt",
        "prefill_assistant",
    }
)
# Bumped when Corral's file layout or what goes into the key changes.
_KEY_VERSION = 1
# What every :attr:`CacheKey.label` looks like (see :func:`cache_key`): the folders
# worker.cache.kv_store may prune; any other folder under --kv-cache-dir is not Corral's.
LABEL = re.compile(r"[A-Za-z0-9._-]{0,64}-[0-9a-f]{16}")


@dataclasses.dataclass(frozen=True, slots=True)
class CacheKey:
    digest: bytes  # sha256 of ``description``, written into every saved file
    label: str  # a readable folder name: the model file's stem and the digest's start
    description: dict[str, Any]


def _file_identity(path: os.PathLike[str] | str) -> dict[str, Any]:
    real = os.path.realpath(path)
    stat = os.stat(real)
    return {"path": real, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _stable(value: object) -> object:
    """A value JSON has no type for, the same in every process: a set's order follows string
    hashing, which differs between processes (a saved cache must find its key again)."""
    if isinstance(value, (set, frozenset)):
        return sorted(map(str, value))
    return str(value)


def cache_key(settings: WorkerSettings) -> CacheKey:
    """The key of this worker's caches; ``OSError`` when the model file cannot be read."""
    values = {
        field.name: getattr(settings, field.name)
        for field in dataclasses.fields(settings)
        if field.name not in _NOT_IN_KEY
    }
    description = {
        "version": _KEY_VERSION,
        "llama_cpp": version("llama_cpp_python"),
        "model": _file_identity(settings.model),
        "settings": values,
    }
    text = json.dumps(description, sort_keys=True, default=_stable)
    digest = hashlib.sha256(text.encode()).digest()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", settings.model.stem)[:64]
    return CacheKey(digest, f"{stem}-{digest.hex()[:16]}", description)
