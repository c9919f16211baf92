"""llama.cpp's preset INI (``--models-preset FILE.ini``), read through the one option table.

Keys are any spelling :data:`corral.options.table.OPTIONS` knows; values are normalised there, so
the
settings of two reloads compare as plain strings. A key llama-server accepts that the table does
not know (:data:`~router.catalogue.llama_server_keys.LLAMA_SERVER_KEYS`) is left out with a one-line
notice, so a preset written for llama-server loads; any other key is an error.

A remote preset, one that came from a hub repository, is parsed with ``remote`` naming that
repository: it may set only :data:`~router.catalogue.remote_presets.REMOTE_PRESET_KEYS` and no
peers, and configures only its own models (router/catalogue/catalogue.py; docs/security.md,
"Hub repositories").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from corral.hub.names import canonical_tag
from corral.options.table import OptionError, find_option, normalise_options
from router.catalogue.llama_server_keys import LLAMA_SERVER_KEYS
from router.catalogue.remote_presets import remote_key_allowed

__all__ = [
    "DEFAULTS_SECTION",
    "PEER_SECTION_PREFIX",
    "PresetError",
    "PresetFile",
    "PresetSection",
    "RawSection",
    "load_preset_file",
    "parse_preset_text",
    "render_ini",
]

_log = structlog.get_logger("corral.router")

DEFAULTS_SECTION = "*"
_IMPLICIT_SECTION = "default"  # upstream's name for keys written before the first header
# ``[peer NAME]`` sections name other servers, not models (docs/scaling.md); their keys are not
# model options, so they are kept as written for router.relay.peer_config.
PEER_SECTION_PREFIX = "peer "


class PresetError(OptionError):
    """A preset file or option is malformed; the message names the file, section and key."""


@dataclass(frozen=True, slots=True)
class PresetSection:
    name: str
    options: Mapping[str, str]  # canonical option name → normalised value
    line: int  # where the header is, for messages


@dataclass(frozen=True, slots=True)
class RawSection:
    name: str  # without the ``peer `` prefix
    pairs: tuple[tuple[str, str], ...]  # keys and values as written, in file order
    line: int


@dataclass(frozen=True, slots=True)
class PresetFile:
    path: Path
    defaults: Mapping[str, str]  # the ``[*]`` section: under every model of every source
    sections: Mapping[str, PresetSection]  # by canonical section name, in file order
    peers: Mapping[str, RawSection] = field(default_factory=dict)  # by peer name, in file order
    remote: str | None = None  # the hub repository it came from; None: the user's own


_HEADER = re.compile(r"\[[ \t]*(?P<name>[^\]]*?)[ \t]*\]")
_KEY_VALUE = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*(?P<value>.*)")
# Only a comment preceded by whitespace ends a value, so "#" and ";" can appear inside one
# (upstream cuts at any of them, which breaks Jinja and URLs).
_TRAILING_COMMENT = re.compile(r"[ \t]+[;#].*$")


def _canonical_section_name(name: str) -> str:
    if name in (DEFAULTS_SECTION, _IMPLICIT_SECTION) or ":" not in name:
        return name
    model, _, tag = name.rpartition(":")
    return f"{model}:{canonical_tag(tag)}"


def _without_no_effect_keys(
    pairs: list[tuple[str, str]], *, source: str, section: str
) -> list[tuple[str, str]]:
    """``pairs`` less the llama-server keys Corral does not act on, each noticed in the log."""
    kept: list[tuple[str, str]] = []
    for key, value in pairs:
        if find_option(key) is None and key in LLAMA_SERVER_KEYS:
            _log.warning(
                "preset key accepted for llama-server compatibility has no effect here",
                file=source,
                section=section,
                key=key,
            )
        else:
            kept.append((key, value))
    return kept


def _check_remote(repo: str, source: str, name: str, pairs: list[tuple[str, str]]) -> None:
    """Refuse what a hub repository's preset may not set (docs/security.md)."""
    where = f"{source}: section [{name}]"
    whose = f"a preset from hub repository {repo}"
    if name.startswith(PEER_SECTION_PREFIX):
        key = f" (key '{pairs[0][0]}')" if pairs else ""
        raise PresetError(f"{where}{key}: {whose} cannot add peers")
    for key, _ in pairs:
        if key != "version" and not remote_key_allowed(key):  # version: as normalise_options
            raise PresetError(
                f"{where}: key '{key}' is not allowed in {whose}: it may set sampling keys"
                " (not grammar, json-schema, logit-bias or ignore-eos), hf-repo, hf-repo-draft,"
                " pooling, jinja, batch-size, ubatch-size, cache-reuse, chat-template-kwargs"
                " and mmap only (docs/security.md)"
            )


def parse_preset_text(text: str, *, source: str, remote: str | None = None) -> PresetFile:
    """Parse INI text; ``source`` names the file in messages and anchors relative paths.

    ``remote``: the hub repository the text comes from, whose keys are checked first.
    """
    raw_sections: dict[str, tuple[int, list[tuple[str, str]]]] = {_IMPLICIT_SECTION: (0, [])}
    current = raw_sections[_IMPLICIT_SECTION][1]
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip(" \t")
        if not stripped or stripped[0] in ";#":
            continue
        content = _TRAILING_COMMENT.sub("", stripped)
        if header := _HEADER.fullmatch(content):
            name = _canonical_section_name(header["name"])
            if not name:
                raise PresetError(f"{source}: line {number}: empty section name")
            if name in raw_sections and (name != _IMPLICIT_SECTION or raw_sections[name][1]):
                first = raw_sections[name][0]
                earlier = f"at line {first}" if first else "by the keys before the first section"
                raise PresetError(
                    f"{source}: line {number}: section [{name}] already defined {earlier}"
                )
            raw_sections[name] = (number, [])
            current = raw_sections[name][1]
        elif pair := _KEY_VALUE.fullmatch(content):
            current.append((pair["key"], pair["value"].rstrip(" \t")))
        else:
            raise PresetError(
                f"{source}: line {number}: expected '[section]' or 'key = value', got {line!r}"
            )
    sections: dict[str, PresetSection] = {}
    defaults: dict[str, str] = {}
    peers: dict[str, RawSection] = {}
    for name, (line_number, pairs) in raw_sections.items():
        if remote is not None:
            _check_remote(remote, source, name, pairs)
        if name.startswith(PEER_SECTION_PREFIX):
            peer = name.removeprefix(PEER_SECTION_PREFIX).strip(" \t")
            peers[peer] = RawSection(peer, tuple(pairs), line_number)
            continue
        pairs = _without_no_effect_keys(pairs, source=source, section=name)
        try:
            options = normalise_options(pairs, where=f"{source}: section [{name}]")
        except OptionError as error:
            raise PresetError(str(error)) from None
        if name == DEFAULTS_SECTION:
            defaults = options
        elif name != _IMPLICIT_SECTION or options:
            sections[name] = PresetSection(name, options, line_number)
    return PresetFile(Path(source), defaults, sections, peers, remote)


def load_preset_file(path: Path, *, remote: str | None = None) -> PresetFile:
    """Read and parse a preset file (``remote``: as :func:`parse_preset_text`); a missing or
    unreadable file is a :class:`PresetError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PresetError(f"preset file does not exist: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PresetError(f"cannot read preset file {path}: {error}") from None
    return parse_preset_text(text, source=str(path), remote=remote)


def render_ini(name: str, options: Iterable[tuple[str, str]]) -> str:
    """One INI section, as upstream's ``common_preset::to_ini`` writes it."""
    lines = [f"[{name}]"]
    for key, value in options:
        escaped = value.replace("\n", "\\\n")
        lines.append(f"{key} = {escaped}")
    return "\n".join(lines) + "\n\n"
