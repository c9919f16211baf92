"""What ``corral serve`` was asked to do, parsed once from flags and ``LLAMA_ARG_*`` variables.

Each field is filled by the flag row whose ``dest`` names it (:mod:`router.cli.serve_flags`),
whose default is the field's, or by one of the named derivations below, which read several
flags (the models to serve, the keys, the tools and the origins they allow); tests/router/cli
checks that every row and every field is one or the other.

A concern that several modules serve reads its settings as its own object, built here from the
fields (where it listens, the names and origins it answers, how large a request may be, where
the models come from, what the scheduler keeps to) and passed down whole, so that a flag's name
is written in its row, its field and at most one module that uses it
(tests/router/cli/test_flag_spellings.py).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from corral.http.cors import CorsPolicy
from corral.http.hosts import HostPolicy
from corral.http.sockets import Listen
from corral.hub.cache_layout import locate_cache_dir
from corral.hub.cache_scan import cached_hub_file
from corral.options.table import normalise_options
from corral.options.text_files import json_object, text_or_file
from router.catalogue.catalogue import CatalogueSources
from router.cli.hub_download import hub_token
from router.cli.serve_flag import default_setting
from router.cli.serve_flags import SERVE_FLAGS
from router.scheduling.room import SchedulerLimits
from router.security.api_keys import ApiKey, load_api_keys
from router.security.connections import ConnectionLimits
from router.security.request_limits import BodyLimit
from router.tools.mcp.mcp_config import McpServerConfig, load_mcp_servers
from router.tools.toolbox import choose_builtin_tools

__all__ = [
    "DERIVATIONS",
    "Autoload",
    "Derivation",
    "Given",
    "OneModel",
    "ServeSettings",
    "serve_settings",
]

_row = partial(default_setting, SERVE_FLAGS)


@dataclass(frozen=True, slots=True)
class OneModel:
    """Single-model mode's model (router/single_model.py): its ``-m`` file or ``-hf``
    repository, the ``--alias`` names it answers to and its ``--tags``."""

    file: Path | None
    repo: str | None
    names: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Autoload:
    """Whether a request for a model that is not running loads it: ``?autoload=`` ("true" or
    "1" load, anything else does not) overrides ``--models-autoload``."""

    default: bool

    def wanted(self, query: str | None) -> bool:
        return self.default if query is None else query.lower() in ("true", "1")


@dataclass(frozen=True, slots=True)
class ServeSettings:
    host: str = _row("host")
    port: int = _row("port")
    models_dir: Path | None = None
    model_files: list[Path] = field(default_factory=list)
    mmproj_file: Path | None = None  # the -m models' projector (--mmproj)
    models_max: int = _row("models_max")
    models_memory_max: int = _row("models_memory_max")  # bytes; 0: no limit
    models_spare: int = _row("models_spare")  # spare workers kept warm (router.workers.spares)
    # The Ray cluster's address whose nodes run the workers (router/cluster/); None: this machine.
    cluster: str | None = _row("cluster")
    models_autoload: bool = _row("models_autoload")
    models_preset: Path | None = None
    # The hub repository models_preset came from (``-hf`` on a remote preset): that file may set
    # only upstream's whitelist of keys (router/catalogue/remote_presets.py); None: the user's.
    # Filled by router.server once the preset is fetched, not by a flag.
    models_preset_repo: str | None = None
    hf_repos: tuple[str, ...] = ()  # hub-cache models to load at startup ("org/repo[:TAG]")
    timeout: float = _row("timeout")  # longest silence from a worker within one response
    # Faults (docs/operations.md): seconds without progress before a busy worker (a loading
    # one) is killed, 0 never; requests that may wait for loads at once, 0 no bound.
    stall_timeout: float = _row("stall_timeout")
    load_timeout: float = _row("load_timeout")
    max_queue: int = _row("max_queue")
    # The order of waiting requests (router/scheduling/waiting_line.py): "swap" or "fifo", and
    # the seconds after which a waiting request goes ahead of every other, and those a person's
    # idle model is kept from batch work (router/scheduling/demand.py).
    schedule: str = _row("schedule")
    schedule_wait_max: float = _row("schedule_wait_max")
    schedule_keep_idle: float = _row("schedule_keep_idle")
    offline: bool = _row("offline")
    cache_dir: Path | None = None  # the hub cache; None leaves cache models out
    # Per-model defaults from the command line, by canonical option name ({"ctx-size": "2048"}).
    model_options: dict[str, str] = field(default_factory=dict)
    # Kept out of repr so that logging the settings never prints a key.
    api_keys: tuple[ApiKey, ...] = field(default=(), repr=False)
    cors_origins: tuple[str, ...] = ("*",)
    # Host names served besides loopback ones (corral/http/hosts.py); "*": any.
    allowed_hosts: tuple[str, ...] = _row("allowed_hosts")
    hf_token: str | None = field(default=_row("hf_token"), repr=False)  # for download children only
    log_format: str | None = _row(
        "log_format"
    )  # "text" or "json"; None: text on a terminal, else JSON
    log_requests: bool = _row("log_requests")  # one access line per request
    log_verbosity: int = _row("log_verbosity")  # -lv: 3 info, 4 debug (corral.logs)
    otel_endpoint: str | None = _row(
        "otel_endpoint"
    )  # --otel-endpoint: traces' collector (router.observe.tracing)
    ui_mcp_proxy: bool = _row("ui_mcp_proxy")  # /cors-proxy fetches URLs for callers; else 403
    ui_mcp_proxy_private: bool = _row("ui_mcp_proxy_private")  # ... private addresses too
    max_body: int = _row("max_body")  # bytes of a request body; more is a 413 before it is read
    max_connections: int = _row("max_connections")  # open client connections; 0: no limit
    cache_share: bool = _row("cache_share")  # all keys share the workers' prompt caches
    # Single-model mode (docs/serving.md): one -m or -hf model, no models dir or preset. That
    # model answers every request whatever it names, and takes --alias/--tags (which are
    # parsed in any mode but applied only in this one).
    single_model: bool = False
    aliases: tuple[str, ...] = _row("aliases")
    tags: tuple[str, ...] = _row("tags")
    # Server-side tools (docs/tools.md): built-in tool names ("all" or names), the directory the
    # file tools are confined to (None: the working directory), the opt-in to
    # exec_shell_command, and the stdio MCP servers.
    tools: tuple[str, ...] = _row("tools")
    tools_root: Path | None = None
    tools_allow_exec: bool = _row("tools_allow_exec")
    mcp_servers: tuple[McpServerConfig, ...] = ()
    # llama-server's server flags (router/api/mounts.py, router/server.py): the path every
    # route is under ("" or "/v2"), a directory of static files, SO_REUSEPORT, and TLS.
    api_prefix: str = _row("api_prefix")
    ui_settings: dict[str, Any] = field(default_factory=dict)  # --ui-config, for /props
    static_path: Path | None = None
    reuse_port: bool = _row("reuse_port")
    ssl_key_file: Path | None = None
    ssl_cert_file: Path | None = None
    # llama-server flags given that Corral accepts without implementing
    # (router.cli.no_effect).
    no_effect_flags: tuple[str, ...] = ()

    @property
    def cache_scoped(self) -> bool:
        """Whether each key's prompt caches serve only that key (router/security/cache_scope.py):
        with keys, unless ``--cache-share``; without keys there is one caller."""
        return bool(self.api_keys) and not self.cache_share

    @property
    def scheduler_limits(self) -> SchedulerLimits:
        return SchedulerLimits(most_resident=self.models_max, most_waiting=self.max_queue)

    @property
    def autoload(self) -> Autoload:
        return Autoload(self.models_autoload)

    @property
    def sources(self) -> CatalogueSources:
        # The courtesy sequence is the swap order's (router/scheduling/admission.py): on for
        # every model unless a preset or the command line says not; off with fifo, which hands
        # a worker every request at once, so that the worker decodes what it always did.
        swap = self.schedule == "swap"
        courtesy = {"courtesy-slot": "true" if swap else "false"}
        return CatalogueSources(
            models_dir=self.models_dir,
            model_files=self.model_files,
            preset_file=self.models_preset,
            cache_dir=self.cache_dir,
            cli_options=self.model_options if swap else {**self.model_options, **courtesy},
            mmproj_file=self.mmproj_file,
            preset_repo=self.models_preset_repo,
            router_options=courtesy if swap else {},
        )

    @property
    def one_model(self) -> OneModel:
        """What single-model mode serves, where ``single_model`` is set."""
        return OneModel(
            file=self.model_files[0] if self.model_files else None,
            repo=self.hf_repos[0] if self.hf_repos else None,
            names=self.aliases,
            tags=self.tags,
        )

    @property
    def hub_token(self) -> str | None:
        """What download children get, never workers (router/cli/hub_download.py)."""
        return hub_token(self.hf_token)

    def served_as_preset(self, reference: str, preset: Path, repo: str) -> ServeSettings:
        """``-hf reference`` is a remote preset (corral/hub/remote_preset.py): served as
        ``--models-preset``, in router mode, naming the repository so that the file may set
        only upstream's whitelist of keys (docs/security.md)."""
        return replace(
            self,
            models_preset=preset,
            models_preset_repo=repo,
            hf_repos=tuple(r for r in self.hf_repos if r != reference),
            single_model=False,
        )

    @property
    def listen(self) -> Listen:
        return Listen(self.host, self.port, reuse_port=self.reuse_port)

    @property
    def hosts(self) -> HostPolicy:
        """The Host check's names (corral/http/hosts.py), around the whole app."""
        return HostPolicy(self.allowed_hosts)

    @property
    def cors(self) -> CorsPolicy:
        """The origins web pages may call from: one policy for the CORS headers around the app
        and the origin gate inside it (router/security/origins.py)."""
        return CorsPolicy(self.cors_origins)

    @property
    def body_limit(self) -> BodyLimit:
        return BodyLimit(self.max_body)

    @property
    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits.from_environment(self.max_connections)


_FIELDS = frozenset(f.name for f in fields(ServeSettings))


@dataclass(frozen=True, slots=True)
class Given:
    """What a derivation reads: each flag row's setting by ``dest``, the per-model options and
    the llama-server flags given without effect (both read by :mod:`router.cli.main`)."""

    flags: dict[str, Any]
    model_options: dict[str, str]
    no_effect_flags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Derivation:
    name: str
    reads: tuple[str, ...]  # the flag rows it reads, by dest
    derive: Callable[[Given], dict[str, Any]]  # the ServeSettings fields it fills, by name


def _models(given: Given) -> dict[str, Any]:
    flags = given.flags
    cache = locate_cache_dir(os.environ)
    model_files, hf_repos = list(flags["model_files"]), tuple(flags["hf_repos"])
    if file := flags["hf_file"]:
        # As llama-server's --hf-file: that file of the one -hf repository, served as a file.
        if len(hf_repos) != 1:
            raise ValueError("--hf-file needs exactly one -hf REPO")
        path = cached_hub_file(cache, hf_repos[0], file)
        if path is None:
            raise ValueError(f"--hf-file {file}: not in the hub cache for {hf_repos[0]}")
        model_files.append(path)
        hf_repos = ()
    many = flags["models_dir"] is not None or flags["models_preset"] is not None
    single = not many and len(model_files) + len(hf_repos) == 1
    # llama-server's router strips its own --alias too; several models take theirs from a
    # preset, so here the flags are noted like any other that does nothing.
    named = (("--alias", flags["aliases"]), ("--tags", flags["tags"]))
    unused = () if single else tuple(flag for flag, value in named if value)
    return {
        "model_files": model_files,
        "hf_repos": hf_repos,
        "single_model": single,
        "cache_dir": cache,
        "no_effect_flags": given.no_effect_flags + unused,
    }


def _keys(given: Given) -> dict[str, Any]:
    files = [Path(name) for name in given.flags["api_key_files"]]
    return {"api_keys": load_api_keys(given.flags["api_keys"], files)}


def _tools(given: Given) -> dict[str, Any]:
    flags = given.flags
    choose_builtin_tools(flags["tools"], flags["tools_allow_exec"])
    servers = load_mcp_servers(flags["mcp_servers_config"], flags["mcp_servers_json"])
    # Tools read and write files: only pages from this machine may call them, unless told.
    unset = ("localhost",) if flags["tools"] or servers else ("*",)
    return {"mcp_servers": servers, "cors_origins": flags["cors_origins"] or unset}


def _tls(given: Given) -> dict[str, Any]:
    """Both TLS files or neither, and a pair that loads: refused now, not at the first client."""
    key, cert = given.flags["ssl_key_file"], given.flags["ssl_cert_file"]
    if key is None and cert is None:
        return {}
    if key is None or cert is None:
        raise ValueError("--ssl-key-file and --ssl-cert-file go together")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"--ssl-cert-file {cert} / --ssl-key-file {key}: {exc}") from None
    return {}


def _model_options(given: Given) -> dict[str, Any]:
    """The per-model flags; ``--mmproj-auto``/``--no-mmproj`` (a catalogue option, not a worker
    flag) beats its variable. ``--ui-config`` (or its file) is what the router's ``/props``
    hands to the Web UI; the workers get the option too, for their own ``/props``."""
    options = given.model_options
    if (auto := given.flags["mmproj_auto"]) is not None:
        options |= normalise_options([("mmproj-auto", auto)], where="command line")
    text = text_or_file(options, "ui-config")
    return {
        "model_options": options,
        "ui_settings": json_object(text, "ui-config") if text is not None else {},
    }


_MODELS = ("model_files", "hf_repos", "hf_file", "models_dir", "models_preset", "aliases", "tags")
_TOOLS = ("tools", "tools_allow_exec", "mcp_servers_config", "mcp_servers_json", "cors_origins")

DERIVATIONS: tuple[Derivation, ...] = (
    Derivation("the models to serve", _MODELS, _models),
    Derivation("keys", ("api_keys", "api_key_files"), _keys),
    Derivation("tools and the origins they allow", _TOOLS, _tools),
    Derivation("tls", ("ssl_key_file", "ssl_cert_file"), _tls),
    Derivation("model options", ("mmproj_auto",), _model_options),
)


def serve_settings(given: Given) -> ServeSettings:
    """Each row's setting into its field, then the derivations; a ValueError (an OptionError, a
    key file's or an MCP configuration's error) says what is wrong."""
    settings = {dest: value for dest, value in given.flags.items() if dest in _FIELDS}
    for derivation in DERIVATIONS:
        settings |= derivation.derive(given)
    return ServeSettings(**settings)
