"""Every preset key llama-server accepts, from its flags table.

A preset key is any spelling of an option llama-server parses (``common/preset.cpp``,
``get_map_key_opt``): its flags without dashes, its negative flags, its environment variable
and, for an option with a negative flag, the ``LLAMA_ARG_NO_*`` variant. The options are those
of :data:`~corral.options.llama_server_flags.LLAMA_SERVER_FLAGS` (generated from the vendored
arg.cpp). A preset key in here that Corral's option table does not know is accepted with a
notice that it has no effect (docs/serving.md), never a startup error. The keys of the options
arg.cpp marks as sampling ones are listed apart too: upstream's remote-preset whitelist starts
from them (router/catalogue/remote_presets.py).
"""

from __future__ import annotations

from corral.options.llama_server_flags import LLAMA_SERVER_FLAGS, LlamaServerFlag

__all__ = ["LLAMA_SERVER_KEYS", "LLAMA_SERVER_SAMPLING_KEYS"]


def _keys(flag: LlamaServerFlag) -> set[str]:
    keys = {spelling.lstrip("-") for spelling in flag.spellings}
    if flag.env:
        keys.add(flag.env)
        if flag.negatives:  # as common_arg::get_env, which replaces the prefix if it has one
            keys.add(flag.env.replace("LLAMA_ARG_", "LLAMA_ARG_NO_"))
    return keys


LLAMA_SERVER_KEYS = frozenset(key for flag in LLAMA_SERVER_FLAGS for key in _keys(flag))
LLAMA_SERVER_SAMPLING_KEYS = frozenset(
    key for flag in LLAMA_SERVER_FLAGS if flag.sampling for key in _keys(flag)
)
