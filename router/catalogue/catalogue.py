"""Which models exist and how each one runs (docs/protocol.md §2).

Sources, lowest first: the hub cache, ``--models-dir``, ``-m`` files, then the preset INI, whose
sections override a model of the same name or define new ones. Options cascade
``[*]`` < section < router command line, as upstream's ``load_models`` merges them; a hub
repository's preset, only over its own models (router/catalogue/remote_presets.py). Every source
yields the same :class:`CatalogueEntry`, so the worker pool never asks where a model came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from corral.hub.cache_scan import CachedModel, resolve_cached_model, scan_cache
from corral.hub.companions import is_companion
from corral.hub.mmproj import best_mmproj
from corral.hub.names import canonical_tag
from corral.hub.shards import is_first_shard, shard_paths, split_gguf_name
from corral.options.model_options import ModelOptions
from corral.options.table import OptionError, normalise_options, option_spec
from router.catalogue.draft_models import DraftError, absolute_draft, cached_draft
from router.catalogue.presets import PresetFile, PresetSection, load_preset_file, render_ini
from router.catalogue.remote_presets import ForeignModel, RemoteScope

__all__ = [
    "Catalogue",
    "CatalogueEntry",
    "CatalogueError",
    "CatalogueSources",
    "Source",
    "build_catalogue",
    "model_file_path",
]

Source = Literal["models_dir", "cache", "preset"]
DEFAULT_STOP_TIMEOUT = ModelOptions().real("stop-timeout")  # llama-server's, from the table
DEFAULT_MIN_RESIDENCY = ModelOptions().real("min-residency")
# Options that name a file or a model; from the router command line they belong to the
# single-model invocation (``-m``), and under ``[*]`` they would give every model one file/name.
_IDENTITY_KEYS = frozenset({"model", "mmproj", "hf-repo", "hf-file", "alias"})


class CatalogueError(Exception):
    """The model sources are inconsistent or malformed; the message says where."""


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    name: str
    path: Path
    source: Source
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    options: tuple[tuple[str, str], ...] = ()  # worker options, canonical names, sorted by key
    load_on_startup: bool = False
    stop_timeout: float = DEFAULT_STOP_TIMEOUT
    ttl: float | None = None
    pin: bool = False
    min_residency: float = DEFAULT_MIN_RESIDENCY  # seconds after a load before it is evictable
    # The router's tools offered to this model's chats; None: all of them (docs/tools.md).
    tools: tuple[str, ...] | None = None
    memory: int | None = None  # Corral's own: bytes the model holds, declared (else measured)
    replicas: int = 1  # worker copies (docs/scaling.md, "Replicas")
    replicas_max: int = 0  # copies in all with the automatic ones; 0: ``replicas``
    mmproj: Path | None = None
    # ``dedup-cache-models``: a cache model that a preset also serves is left out of listings
    # but still answers to its name.
    hidden: bool = False

    def preset_text(self) -> str:
        """The effective preset as one INI section, the way upstream shows it in ``/models``."""
        keys = dict(self.options)
        keys["model"] = str(self.path)
        if self.mmproj is not None:
            keys["mmproj"] = str(self.mmproj)
        if self.aliases:
            keys["alias"] = ",".join(self.aliases)
        if self.tags:
            keys["tags"] = ",".join(self.tags)
        if self.load_on_startup:
            keys["load-on-startup"] = "true"
        if self.stop_timeout != DEFAULT_STOP_TIMEOUT:
            keys["stop-timeout"] = _format_seconds(self.stop_timeout)
        if self.ttl is not None:
            keys["ttl"] = _format_seconds(self.ttl)
        if self.pin:
            keys["pin"] = "true"
        if self.min_residency != DEFAULT_MIN_RESIDENCY:
            keys["min-residency"] = _format_seconds(self.min_residency)
        if self.memory is not None:
            keys["memory"] = str(self.memory)
        if self.replicas != 1:
            keys["replicas"] = str(self.replicas)
        if self.replicas_max:
            keys["replicas-max"] = str(self.replicas_max)
        if self.tools is not None:
            keys["tools"] = ",".join(self.tools)
        return render_ini(self.name, sorted(keys.items()))

    @property
    def most_copies(self) -> int:
        """The worker copies it may run: ``replicas``, or more up to ``replicas-max``."""
        return max(self.replicas, self.replicas_max)

    def files(self) -> list[Path]:
        """Every file the model loads: its shards, then its projector and its draft model."""
        draft = self.model_options.text("model-draft")
        return [
            *shard_paths(self.path),
            *([self.mmproj] if self.mmproj is not None else []),
            *([Path(draft)] if draft is not None else []),
        ]

    @property
    def model_options(self) -> ModelOptions:
        """The worker options, typed, unset ones at llama-server's defaults."""
        return ModelOptions.of(self.options)

    def worker_args(self) -> list[str]:
        """The options as worker flags, e.g. ``["--ctx-size", "2048", "--no-mmap"]``."""
        return self.model_options.worker_args()


class Catalogue:
    """Every model by canonical name, and the lookup by name or alias."""

    def __init__(self, entries: Mapping[str, CatalogueEntry]) -> None:
        self.entries: dict[str, CatalogueEntry] = dict(sorted(entries.items()))
        self._owners: dict[str, str] = {name: name for name in self.entries}
        for entry in self.entries.values():
            for alias in entry.aliases:
                other = self._owners.get(alias)
                if other is not None:
                    what = "the name of model" if other == alias else "an alias of model"
                    raise CatalogueError(
                        f"alias '{alias}' of model '{entry.name}' is also {what} '{other}'"
                    )
                self._owners[alias] = entry.name

    def names(self) -> list[str]:
        """Every name a request may use: canonical names and aliases."""
        return list(self._owners)

    def listed(self) -> tuple[str, ...]:
        """The canonical names ``/models`` lists: hidden entries (a draft's, a deduplicated
        cache model) are not offered."""
        return tuple(name for name, entry in self.entries.items() if not entry.hidden)

    def resolve(self, name: str) -> CatalogueEntry | None:
        """The model a request names, by canonical name or alias (``repo:q8_0`` = ``repo:Q8_0``)."""
        owner = self._owners.get(name)
        if owner is None and ":" in name:
            repo, _, tag = name.rpartition(":")
            owner = self._owners.get(f"{repo}:{canonical_tag(tag)}")
        return self.entries[owner] if owner is not None else None


def _format_seconds(seconds: float) -> str:
    return repr(seconds).removesuffix(".0")


@dataclass(slots=True)
class _Found:
    """A model as a source found it, before presets and command-line options apply."""

    name: str
    path: Path
    source: Source
    mmproj: Path | None = None
    load_on_startup: bool = False
    options: dict[str, str] = field(default_factory=dict)  # from its preset section, if any


def model_file_path(path: Path) -> Path:
    """A ``-m`` file as the worker is given it: absolute, but a symlink is not followed. In the
    hub cache a snapshot file links to ``blobs/<sha256>``, and llama.cpp finds a split model's
    other shards by name beside the path it loads, which only the snapshot folder has."""
    return Path(os.path.abspath(path))


def _names_a_model(path: Path) -> bool:
    return not is_companion(path.name) and is_first_shard(path.name)


def _scan_models_dir(models_dir: Path) -> list[_Found]:
    if not models_dir.is_dir():
        raise CatalogueError(f"--models-dir {models_dir}: not a directory")
    found: list[_Found] = []
    for child in sorted(models_dir.iterdir()):
        if child.is_file() and child.suffix == ".gguf":
            if _names_a_model(child):
                found.append(_Found(child.stem, child, "models_dir"))
        elif child.is_dir():
            ggufs = sorted(child.glob("*.gguf"))
            models = [p for p in ggufs if _names_a_model(p)]
            if models:
                model = PurePosixPath(models[0].name)
                tag = split_gguf_name(model.name)[2]
                mmproj = best_mmproj(model, tag, [PurePosixPath(p.name) for p in ggufs])
                found.append(
                    _Found(child.name, models[0], "models_dir", child / mmproj if mmproj else None)
                )
    return found


def _add_found(models: dict[str, _Found], model: _Found) -> None:
    other = models.get(model.name)
    if other is not None and other.path.resolve() != model.path.resolve():
        raise CatalogueError(f"model '{model.name}' appears twice: {other.path} and {model.path}")
    if other is None or model.load_on_startup:  # the same file again via -m: it loads at startup
        models[model.name] = model


def _preset_path(preset: PresetFile, where: str, key: str, value: str) -> Path:
    # Relative to the INI file, not the router's working directory, so a preset can travel
    # with its models; absolute paths are the user's own configuration and are kept.
    path = (preset.path.parent / Path(value).expanduser()).absolute()
    if not path.is_file():
        raise CatalogueError(f"{where}: key '{key}': no such file: {path}")
    return path


def _apply_section(
    models: dict[str, _Found], preset: PresetFile, section: PresetSection, cached: list[CachedModel]
) -> None:
    where = f"{preset.path}: section [{section.name}]"
    options = section.options
    base = models.get(section.name)
    model_value, repo_value = options.get("model"), options.get("hf-repo")
    if model_value is not None and repo_value is not None:
        raise CatalogueError(f"{where}: set either 'model' or 'hf-repo', not both")
    if model_value is not None:  # another file: a projector found next to the old one is dropped
        path, mmproj = _preset_path(preset, where, "model", model_value), None
    elif repo_value is not None:
        found = resolve_cached_model(cached, repo_value, options.get("hf-file"))
        if found is None:
            raise CatalogueError(
                f"{where}: key 'hf-repo': '{repo_value}' is not in the hub cache"
                " (download it first, e.g. with POST /models)"
            )
        path, mmproj = found.path, found.mmproj
    elif base is not None:
        path, mmproj = base.path, base.mmproj
    else:
        raise CatalogueError(
            f"{where}: no model: set 'model' or 'hf-repo', or name the section after a"
            " cache or --models-dir model"
        )
    if "mmproj" in options:
        mmproj = _preset_path(preset, where, "mmproj", options["mmproj"])
    startup = base.load_on_startup if base is not None else False
    options = _absolute_media_path(
        absolute_draft(options, preset.path.parent, where), preset, where
    )
    models[section.name] = _Found(section.name, path, "preset", mmproj, startup, options)


def _absolute_media_path(
    options: Mapping[str, str], preset: PresetFile | None, where: str
) -> dict[str, str]:
    """``media-path`` made absolute, against the INI file's folder as the preset's file paths
    are (the working directory for the command line's), and checked to be a folder, which
    llama-server checks at startup too."""
    folder = options.get("media-path")
    if folder is None:
        return dict(options)
    base = preset.path.parent if preset is not None else Path.cwd()
    path = Path(os.path.abspath(base / Path(folder).expanduser()))
    if not path.is_dir():
        raise CatalogueError(f"{where}: key 'media-path': not a directory: {path}")
    return {**options, "media-path": str(path)}


def _mmproj_file(path: Path | None) -> Path | None:
    if path is not None and not path.is_file():
        raise CatalogueError(f"--mmproj {path}: no such file")
    return path.resolve() if path is not None else None


def _comma_list(value: str | None, *, exclude: str = "") -> tuple[str, ...]:
    items = {item.strip() for item in (value or "").split(",")}
    return tuple(sorted(item for item in items if item and item != exclude))


def _tool_set(value: str | None) -> tuple[str, ...] | None:
    """A ``tools`` preset value as names, in the order written; ``all`` (or no key) is None."""
    if value is None:
        return None
    names = [name.strip() for name in value.split(",") if name.strip()]
    return None if "all" in names else tuple(dict.fromkeys(names))


def _entry(model: _Found, options: dict[str, str]) -> CatalogueEntry:
    """The entry for one model once ``[*]``, its section and the command line are merged."""
    worker_options = tuple(
        sorted((key, value) for key, value in options.items() if option_spec(key).role == "worker")
    )
    given = ModelOptions(options)
    return CatalogueEntry(
        name=model.name,
        path=model.path,
        source=model.source,
        aliases=_comma_list(options.get("alias"), exclude=model.name),
        tags=_comma_list(options.get("tags")),
        options=worker_options,
        load_on_startup=model.load_on_startup or given.flag("load-on-startup"),
        stop_timeout=given.real("stop-timeout"),
        ttl=given.optional_real("ttl"),
        pin=given.flag("pin"),
        min_residency=given.real("min-residency"),
        memory=given.optional_integer("memory"),
        replicas=given.integer("replicas"),
        replicas_max=given.integer("replicas-max"),
        tools=_tool_set(options.get("tools")),
        # ``no-mmproj`` turns off pairing with a found projector; a named one is still used.
        mmproj=model.mmproj if given.flag("mmproj-auto") or "mmproj" in model.options else None,
    )


def _hide_deduplicated(entries: dict[str, CatalogueEntry], dedup_paths: set[Path]) -> None:
    """Upstream's ``dedup-cache-models``: a plain cache model whose file a preset serves too."""
    for name, entry in entries.items():
        if entry.source == "cache" and entry.path.resolve() in dedup_paths:
            entries[name] = replace(entry, hidden=True)


def _check_defaults(preset: PresetFile) -> None:
    forbidden = sorted(_IDENTITY_KEYS & preset.defaults.keys())
    if forbidden:
        raise CatalogueError(
            f"{preset.path}: section [*]: key '{forbidden[0]}' cannot be a default for every model"
        )


@dataclass(frozen=True, slots=True)
class CatalogueSources:
    """Where the models come from, built once from the settings (router/settings.py)."""

    models_dir: Path | None = None
    model_files: Sequence[Path] = ()
    preset_file: Path | None = None
    cache_dir: Path | None = None
    # Per-model flags, any spelling; file and name options are dropped, as upstream does.
    cli_options: Mapping[str, str] = field(default_factory=dict)
    mmproj_file: Path | None = None  # --mmproj: the -m files' projector, as llama-server pairs
    preset_repo: str | None = None  # the hub repository of a remote preset: upstream's keys only
    # The router's own per-model defaults, below every preset's and the command line's.
    router_options: Mapping[str, str] = field(default_factory=dict)

    def log_fields(self) -> dict[str, str | None]:
        """What a log line about the sources shows of them: the directory given, if any."""
        return {"models_dir": None if self.models_dir is None else str(self.models_dir)}


def build_catalogue(sources: CatalogueSources) -> Catalogue:
    """Every model from every source, with its options merged; raises :class:`CatalogueError`."""
    try:
        cli = normalise_options(sources.cli_options.items(), where="command line")
        file, remote = sources.preset_file, sources.preset_repo
        preset = load_preset_file(file, remote=remote) if file is not None else None
    except OptionError as error:
        raise CatalogueError(str(error)) from None
    cli = {key: value for key, value in cli.items() if key not in _IDENTITY_KEYS}
    try:
        return _build(sources, preset, cli)
    except (DraftError, ForeignModel) as error:
        raise CatalogueError(str(error)) from None


def _build(sources: CatalogueSources, preset: PresetFile | None, cli: dict[str, str]) -> Catalogue:
    models_dir, cache_dir = sources.models_dir, sources.cache_dir
    where = "command line"
    cli = _absolute_media_path(absolute_draft(cli, Path.cwd(), where), None, where)
    cached = scan_cache(cache_dir) if cache_dir is not None else []
    models: dict[str, _Found] = {}
    for cached_model in cached:
        _add_found(
            models, _Found(cached_model.name, cached_model.path, "cache", cached_model.mmproj)
        )
    for found in _scan_models_dir(models_dir) if models_dir is not None else []:
        _add_found(models, found)
    for path in sources.model_files:
        if not path.is_file():
            raise CatalogueError(f"-m {path}: no such file")
        mmproj = _mmproj_file(sources.mmproj_file)
        explicit = {"mmproj": str(mmproj)} if mmproj is not None else {}
        _add_found(
            models,
            _Found(path.stem, model_file_path(path), "models_dir", mmproj, True, explicit),
        )
    defaults: Mapping[str, str] = {}
    scope = None  # a hub repository's preset's own models; None: the preset covers every one
    if preset is not None:
        _check_defaults(preset)
        where = f"{preset.path}: section [*]"
        defaults = _absolute_media_path(
            absolute_draft(preset.defaults, preset.path.parent, where), preset, where
        )
        scope = RemoteScope(preset.remote, preset.path, cached) if preset.remote else None
        for section in preset.sections.values():
            if scope is not None:
                scope.claim(section.name, section.options, taken=section.name in models)
            _apply_section(models, preset, section, cached)
    entries: dict[str, CatalogueEntry] = {}
    dedup_paths: set[Path] = set()
    for name, model in models.items():
        below = defaults if scope is None or name in scope.models else {}
        merged = {**sources.router_options, **below, **model.options, **cli}
        options = cached_draft(merged, cached, f"model '{name}'")
        entries[name] = _entry(model, options)
        if model.source == "preset" and ModelOptions(options).flag("dedup-cache-models"):
            # As upstream: the draft's cache entry is hidden too.
            dedup_paths.add(model.path.resolve())
            if "model-draft" in options:
                dedup_paths.add(Path(options["model-draft"]).resolve())
    _hide_deduplicated(entries, dedup_paths)
    return Catalogue(entries)
