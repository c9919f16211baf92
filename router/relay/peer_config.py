"""``[peer NAME]`` preset sections: other OpenAI-compatible servers whose models the router
relays to (docs/scaling.md).

A peer is described, not contacted, here: a bad section is a :class:`PresetError` naming the
file, the section and the key, exactly as a bad model section is, and a reload keeps the old
peers when the new file is wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from router.catalogue.presets import PresetError, PresetFile, RawSection, load_preset_file

__all__ = ["PeerConfig", "load_peer_configs", "peer_configs"]

DEFAULT_TIMEOUT = 600.0
DEFAULT_REFRESH = 60.0
_KEYS = frozenset({"url", "api-key", "api-key-file", "models", "prefix", "timeout", "refresh",
                   "prefer"})  # fmt: skip


@dataclass(frozen=True, slots=True)
class PeerConfig:
    name: str
    scheme: str  # "http" or "https"
    host: str
    port: int
    base_path: str  # the URL's path without its trailing slash, "" for none
    # Kept out of repr so that logging a peer never prints its key.
    api_key: str | None = field(default=None, repr=False)
    models: tuple[str, ...] | None = None  # the peer's names to serve; None: all it lists
    prefix: str = ""
    timeout: float = DEFAULT_TIMEOUT
    refresh: float = DEFAULT_REFRESH  # seconds between listings; 0: only on reload
    prefer: bool = False  # ``prefer = peer``: this peer wins a name a local model also has

    @property
    def url(self) -> str:
        """The peer's address as shown to users (never with a key: keys are not URL parts)."""
        return f"{self.scheme}://{self.host}:{self.port}{self.base_path}"


def _seconds(where: str, key: str, value: str, *, zero_ok: bool) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero_ok):
        least = "0 or more" if zero_ok else "more than 0"
        raise PresetError(f"{where}: key '{key}': expected seconds, {least}, got {value!r}")
    return seconds


def _address(where: str, value: str) -> tuple[str, str, int, str]:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PresetError(f"{where}: key 'url': expected http://HOST[:PORT][/PATH], got {value!r}")
    if parts.username is not None or parts.password is not None:
        raise PresetError(f"{where}: key 'url': put credentials in 'api-key', not in the URL")
    if parts.query or parts.fragment:
        raise PresetError(f"{where}: key 'url': a query or fragment has no meaning here")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise PresetError(f"{where}: key 'url': bad port in {value!r}") from None
    return parts.scheme, parts.hostname, port, parts.path.rstrip("/")


def _key(where: str, keys: dict[str, str], anchor: Path) -> str | None:
    if "api-key" in keys and "api-key-file" in keys:
        raise PresetError(f"{where}: set either 'api-key' or 'api-key-file', not both")
    if "api-key-file" not in keys:
        return keys.get("api-key") or None
    path = anchor / Path(keys["api-key-file"]).expanduser()
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise PresetError(f"{where}: key 'api-key-file': cannot read {path}: {error}") from None
    if not key:
        raise PresetError(f"{where}: key 'api-key-file': {path} is empty")
    return key


def _peer(preset: PresetFile, section: RawSection) -> PeerConfig:
    where = f"{preset.path}: section [peer {section.name}]"
    if not section.name:
        raise PresetError(f"{where}: a peer needs a name: [peer NAME]")
    keys: dict[str, str] = {}
    for key, value in section.pairs:
        key = key.replace("_", "-")
        if key not in _KEYS:
            known = ", ".join(sorted(_KEYS))
            raise PresetError(f"{where}: unknown key '{key}' (a peer takes {known})")
        keys[key] = value
    if "url" not in keys:
        raise PresetError(f"{where}: key 'url' is required")
    scheme, host, port, base_path = _address(where, keys["url"])
    models_value = keys.get("models", "*").strip()
    models = None
    if models_value != "*":
        models = tuple(dict.fromkeys(m.strip() for m in models_value.split(",") if m.strip()))
        if not models:
            raise PresetError(f"{where}: key 'models': list the peer's models, or '*' for all")
    prefer = keys.get("prefer", "local")
    if prefer not in ("local", "peer"):
        raise PresetError(f"{where}: key 'prefer': expected 'local' or 'peer', got {prefer!r}")
    return PeerConfig(
        name=section.name,
        scheme=scheme,
        host=host,
        port=port,
        base_path=base_path,
        api_key=_key(where, keys, preset.path.parent),
        models=models,
        prefix=keys.get("prefix", ""),
        timeout=_seconds(
            where, "timeout", keys.get("timeout", str(DEFAULT_TIMEOUT)), zero_ok=False
        ),
        refresh=_seconds(where, "refresh", keys.get("refresh", str(DEFAULT_REFRESH)), zero_ok=True),
        prefer=prefer == "peer",
    )


def peer_configs(preset: PresetFile) -> tuple[PeerConfig, ...]:
    """The file's peers, in file order; raises :class:`PresetError`."""
    return tuple(_peer(preset, section) for section in preset.peers.values())


def load_peer_configs(path: Path | None, *, remote: str | None = None) -> tuple[PeerConfig, ...]:
    """The peers of the preset at ``path``; ``remote``: the hub repository it came from, whose
    preset may name none (router.catalogue.presets refuses it)."""
    return peer_configs(load_preset_file(path, remote=remote)) if path is not None else ()
