"""What a hub repository's ``preset.ini`` may set (docs/security.md, "Hub repositories").

A remote preset (:mod:`corral.hub.remote_preset`, ``corral serve -hf org/repo``) is a stranger's
file read as configuration on the user's machine. A key whose value is a path, a URL, a host or
a device would let the repository's author read the user's files (``chat-template-file`` comes
back through ``/props``), send local secrets to a server of theirs (a ``[peer]`` with
``api-key-file``), or hand prompts and weights to their RPC server. So a remote preset takes only
the keys below, and no ``[peer NAME]`` section; anything else stops the router with a message
naming the repository, the section and the key. Local presets (``--models-preset``) are the
user's own and keep every key.
"""

from __future__ import annotations

from corral.options.table import find_option
from corral.sampling_fields import sampling_option_rows
from router.catalogue.llama_server_keys import LLAMA_SERVER_SAMPLING_KEYS

__all__ = ["REMOTE_PRESET_KEYS", "remote_key_allowed"]

# Upstream llama.cpp's whitelist (common/preset.cpp, get_remote_preset_whitelist: "only allow a
# subset of args for remote presets for security reasons"): every option common/arg.cpp marks
# .set_sampling(), plus model-url, hf-repo, hf-repo-draft, hf-repo-v, hf-file-v, mmproj-url,
# pooling, jinja, batch-size, ubatch-size, cache-reuse, chat-template-kwargs and mmap. Corral
# keeps it less the keys whose value is a path or a URL (grammar-file, json-schema-file,
# model-url, mmproj-url) and the vocoder's (hf-repo-v, hf-file-v: no key of Corral's). The
# llama.cpp llama-cpp-python 0.3.36 vendors has since dropped the filter for a warning ("please
# only use presets that you can trust"); Corral keeps it. Canonical names of
# corral.options.table; tests/router/catalogue/test_remote_presets.py checks this table against
# upstream's list.
REMOTE_PRESET_KEYS = frozenset(
    {
        # Sampling: request defaults, what is generated, never where anything is read from:
        # every option of the sampling fields' table (each one upstream allows too, tested).
        *(spec.name for spec in sampling_option_rows()),
        "grammar",
        "json-schema",
        # The few others upstream names. hf-repo and spec-draft-hf (upstream's hf-repo-draft)
        # name hub repositories, looked up in the hub cache by name, never as paths.
        "hf-repo",
        "spec-draft-hf",
        "pooling",
        "jinja",
        "batch-size",
        "ubatch-size",
        "cache-reuse",
        "chat-template-kwargs",
        "mmap",
    }
)


def remote_key_allowed(key: str) -> bool:
    """Whether a remote preset may set ``key`` (any spelling, negative ones included)."""
    found = find_option(key)
    if found is None:
        # A llama-server sampling option Corral does not act on (backend-sampling): upstream
        # allows it, and here it is left out with the usual notice anyway.
        return key in LLAMA_SERVER_SAMPLING_KEYS
    return found[0].name in REMOTE_PRESET_KEYS
