"""What a hub repository's ``preset.ini`` may set (docs/security.md, "Hub repositories").

A remote preset (:mod:`corral.hub.remote_preset`, ``corral serve -hf org/repo``) is a stranger's
file read as configuration on the user's machine. A key whose value is a path, a URL, a host or
a device would let the repository's author read the user's files (``chat-template-file`` comes
back through ``/props``), send local secrets to a server of theirs (a ``[peer]`` with
``api-key-file``), or hand prompts and weights to their RPC server. So a remote preset takes only
the keys below, and no ``[peer NAME]`` section; anything else stops the router with a message
naming the repository, the section and the key. Nor may it set what forces every answer's text
(``grammar``, ``json-schema``, ``logit-bias``, ``ignore-eos``): sampling settings tune a model,
these would write its answers.

And it configures its own models only (:class:`RemoteScope`): its repository's in the hub cache
and those its sections bring with ``hf-repo``, never the user's others. Local presets
(``--models-preset``) are the user's own: every key, every model.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from corral.hub.cache_scan import CachedModel
from corral.options.sampling_fields import IGNORE_EOS, LOGIT_BIAS, sampling_option_rows
from corral.options.table import find_option
from router.catalogue.llama_server_keys import LLAMA_SERVER_SAMPLING_KEYS

__all__ = [
    "OUTPUT_FORCING_KEYS",
    "REMOTE_PRESET_KEYS",
    "ForeignModel",
    "RemoteScope",
    "remote_key_allowed",
]

# Upstream llama.cpp's whitelist (common/preset.cpp, get_remote_preset_whitelist: "only allow a
# subset of args for remote presets for security reasons"): every option common/arg.cpp marks
# .set_sampling(), plus model-url, hf-repo, hf-repo-draft, hf-repo-v, hf-file-v, mmproj-url,
# pooling, jinja, batch-size, ubatch-size, cache-reuse, chat-template-kwargs and mmap. Corral
# keeps it less the keys whose value is a path or a URL (grammar-file, json-schema-file,
# model-url, mmproj-url), the vocoder's (hf-repo-v, hf-file-v: no key of Corral's) and
# the sampling keys that force the output (OUTPUT_FORCING_KEYS). The
# llama.cpp llama-cpp-python 0.3.36 vendors has since dropped the filter for a warning ("please
# only use presets that you can trust"); Corral keeps it. Canonical names of
# corral.options.table; tests/router/catalogue/test_remote_presets.py checks this table against
# upstream's list.
# A grammar or a schema decides every answer's text ("Your session expired: log in again at
# https://evil.example"); a logit bias can ban or force tokens, ignore-eos make every answer
# run to its length limit. A stranger's preset tunes sampling, it does not write the answers.
OUTPUT_FORCING_KEYS = frozenset({"grammar", "json-schema", LOGIT_BIAS.option, IGNORE_EOS.option})
REMOTE_PRESET_KEYS = frozenset(
    {
        # Sampling: request defaults, how it is generated, never where anything is read from:
        # the sampling fields' table (each one upstream allows too, tested), less the above.
        *(spec.name for spec in sampling_option_rows() if spec.name not in OUTPUT_FORCING_KEYS),
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


class ForeignModel(ValueError):
    """A hub repository's preset names a model that does not come from it; the message names
    the repository, the section and the key."""


class RemoteScope:
    """The models a hub repository's preset configures (docs/security.md): its repository's own
    in the hub cache, and those its sections bring (``hf-repo``, under a name no other model
    has). Its ``[*]`` applies to these only; a section named after any other model (from
    ``--models-dir``, ``-m``, another repository) would reconfigure the user's, and is refused.
    """

    def __init__(self, repo: str, source: Path, cached: Iterable[CachedModel]) -> None:
        self._repo, self._source = repo, source
        self.models = {model.name for model in cached if model.repo == repo}

    def claim(self, section: str, keys: Iterable[str], *, taken: bool) -> None:
        """Section ``section`` configures the model of its name; ``taken``: a model of the
        user's sources (or of the repository's) has that name already."""
        if taken and section not in self.models:
            first = next(iter(keys), None)
            key = f" (key '{first}')" if first is not None else ""
            raise ForeignModel(
                f"{self._source}: section [{section}]{key}: a preset from hub repository"
                f" {self._repo} cannot configure model '{section}', which does not come from it"
                " (docs/security.md)"
            )
        self.models.add(section)
