"""``corral pull``, ``corral ls``, ``corral rm``, ``corral ps`` and ``corral top``
(docs/protocol.md §7; ``top`` is router/cli/top.py).

``pull`` and ``rm`` work on the hub cache directly, no router needed: ``pull`` runs the same
download child a router starts for ``POST /models`` (:mod:`router.cli.hub_download`). ``ls`` lists
what a router would serve from the same sources; ``ls``, ``ps`` and ``rm`` ask a running router,
when one answers, for the models' status.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corral.hub.cache_layout import locate_cache_dir
from corral.hub.cache_scan import resolve_cached_model, scan_cache
from corral.hub.names import InvalidReference
from corral.hub.removal import NotInCache, remove_cached_model
from corral.hub.sizes import files_size, human_size
from router.catalogue.catalogue import CatalogueError, CatalogueSources, build_catalogue
from router.cli.help import COMMAND_SUMMARIES, SuggestingParser
from router.cli.hub_download import DownloadFailed, download_model, hub_token
from router.cli.router_client import (
    RouterRefused,
    RouterUnavailable,
    default_router_url,
    fetch_listing,
    fetch_models,
    router_key,
    router_url,
)
from router.cli.top import add_top_flags, run_top

__all__ = ["CACHE_COMMANDS", "cache_command_parsers", "run_cache_command"]

_RUNNING = ("loading", "loaded", "sleeping", "downloading")
_SERVING = ("loading", "loaded", "sleeping")  # a worker has the file open


def _pull(args: argparse.Namespace) -> int:
    cache_dir = locate_cache_dir(os.environ)
    try:
        name = download_model(
            args.model, cache_dir, token=hub_token(args.hf_token), progress=sys.stderr
        )
    except KeyboardInterrupt:
        print("\ncorral pull: interrupted; the same command resumes it", file=sys.stderr)
        return 130
    except DownloadFailed as exc:
        print(f"corral pull: {exc}", file=sys.stderr)
        return 1
    found = resolve_cached_model(scan_cache(cache_dir), name)
    print(f"{name}: {found.path if found is not None else cache_dir}")
    return 0


def _router_models(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """The ``/models`` entries of the router at ``--url``, when one answers; else ``None``.
    Raises :class:`RouterRefused` for one that answers but refuses (it wants a key)."""
    try:
        return fetch_models(args.url, router_key(args.api_key), timeout=3)
    except RouterRefused:
        raise
    except RouterUnavailable:
        return None


def _statuses(args: argparse.Namespace) -> dict[str, str] | None:
    """Each model's status by id, when a router answers at ``--url``; else ``None`` (a
    refusal said on stderr, as ``corral ps`` says it)."""
    try:
        models = _router_models(args)
    except RouterRefused as exc:
        print(f"corral rm: {exc}", file=sys.stderr)
        return None
    return None if models is None else _status_by_id(models)


def _status_by_id(models: list[dict[str, Any]]) -> dict[str, str]:
    return {str(entry["id"]): str(entry.get("status", {}).get("value", "")) for entry in models}


def _served_only(models: list[dict[str, Any]], listed: set[str]) -> list[list[str]]:
    """Rows for what the router serves from sources this command was not told about (its own
    ``--models-dir``, ``-m`` files): the router knows them, so ``ls`` shows them too."""
    rows = []
    for entry in models:
        status = entry.get("status", {})
        if entry["id"] in listed or status.get("value") == "downloading":
            continue
        preset = str(status.get("preset", ""))
        path = next((line[8:] for line in preset.splitlines() if line.startswith("model = ")), "-")
        size = human_size(int(entry["size"])) if "size" in entry else "-"
        rows.append(
            [
                str(entry["id"]),
                str(entry.get("source", "-")),
                size,
                str(status.get("value", "-")),
                path,
            ]
        )
    return rows


def _ls(args: argparse.Namespace) -> int:
    cache_dir = locate_cache_dir(os.environ)
    try:
        sources = CatalogueSources(
            models_dir=args.models_dir, preset_file=args.models_preset, cache_dir=cache_dir
        )
        catalogue = build_catalogue(sources)
    except CatalogueError as exc:
        print(f"corral ls: {exc}", file=sys.stderr)
        return 1
    entries = [entry for entry in catalogue.entries.values() if not entry.hidden]
    refused = False
    try:
        served = _router_models(args)
    except RouterRefused as exc:  # its statuses are missing: say why, as `corral ps` does
        print(f"corral ls: {exc}", file=sys.stderr)
        served, refused = None, True
    statuses = _status_by_id(served) if served is not None else None
    header = ["MODEL", "SOURCE", "SIZE", *(["STATUS"] if statuses is not None else []), "PATH"]
    rows = [header]
    for entry in entries:
        status = [statuses.get(entry.name, "-")] if statuses is not None else []
        size = human_size(files_size(entry.files()))
        rows.append([entry.name, entry.source, size, *status, str(entry.path)])
    if served is not None:
        rows += _served_only(served, {entry.name for entry in entries})
    if len(rows) == 1:
        router = "" if refused else f", and no router answers at {args.url}"
        print(
            f"no models: the hub cache {cache_dir} is empty{router}; --models-dir and "
            "--models-preset add others",
            file=sys.stderr,
        )
        return 1 if refused else 0
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[-1]
        )
    return 0


def _confirmed(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _rm(args: argparse.Namespace) -> int:
    cache_dir = locate_cache_dir(os.environ)
    statuses = _statuses(args)
    status = (statuses or {}).get(args.model) or (statuses or {}).get(_canonical(args.model))
    if status in _SERVING and not args.force:
        print(
            f"corral rm: the router at {args.url} is serving {args.model} ({status})",
            file=sys.stderr,
        )
        if not sys.stdin.isatty():
            print("corral rm: pass --force to delete it anyway", file=sys.stderr)
            return 1
        if not _confirmed("Delete its files anyway? [y/N] "):
            print("corral rm: kept", file=sys.stderr)
            return 1
    try:
        removed = remove_cached_model(cache_dir, args.model)
    except (NotInCache, InvalidReference) as exc:
        print(f"corral rm: {exc}", file=sys.stderr)
        return 1
    print(f"removed {args.model} ({len(removed)} files)")
    return 0


def _canonical(reference: str) -> str:
    found = resolve_cached_model(scan_cache(locate_cache_dir(os.environ)), reference)
    return found.name if found is not None else reference


def _describe(entry: dict[str, Any]) -> str:
    status = entry.get("status", {})
    memory = entry.get("memory") or {}
    if "rss" in memory:
        return human_size(memory["rss"])
    progress = status.get("progress") or {}
    done = sum(item.get("done", 0) for item in progress.values())
    total = sum(item.get("total", 0) for item in progress.values())
    return f"{human_size(done)}/{human_size(total)}" if total else "-"


def _vram(entry: dict[str, Any]) -> str:
    """What a model holds on the GPUs, by device: ``9.0 GB (CUDA0)``; ``-`` for none."""
    memory = entry.get("memory") or {}
    devices: dict[str, int] = memory.get("devices") or {}
    if not devices:
        return "-"
    if len(devices) == 1:
        return f"{human_size(memory['vram'])} ({next(iter(devices))})"
    split = ", ".join(f"{name} {human_size(size)}" for name, size in devices.items())
    return f"{human_size(memory['vram'])} ({split})"


def _print_queue(entries: list[dict[str, Any]]) -> None:
    """The scheduler's queue (docs/serving.md, "Scheduling"): per model, who waits and why."""
    queued = [(str(entry["id"]), entry["queue"]) for entry in entries if entry.get("queue")]
    if not queued:
        return

    def counts(by: dict[str, int]) -> str:
        return ", ".join(f"{name or '-'} {count}" for name, count in sorted(by.items()))

    width = max(len("QUEUED FOR"), *(len(name) for name, _ in queued))
    print(f"\n{'QUEUED FOR':<{width}}  WAITING  {'WHY':<8}  {'OLDEST':<8}  CLASSES; KEYS")
    for name, queue in queued:
        oldest = f"{queue['oldest_seconds']:.1f} s"
        why = queue.get("reason") or "-"
        detail = f"{counts(queue['classes'])}; {counts(queue['keys'])}"
        print(f"{name:<{width}}  {queue['waiting']:<7}  {why:<8}  {oldest:<8}  {detail}")


def _running_copies(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A model's running worker copies (``replicas``, docs/scaling.md); none listed: one."""
    return [r for r in entry.get("replicas") or [] if r.get("status") in _RUNNING]


def _rows(entry: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """A running model's lines: the model (its memory the first running copy's), then with
    copies one per copy: its node, status and resident memory."""
    copies = _running_copies(entry)
    nodes = ",".join(str(c["node"]) for c in copies if c.get("node")) or entry.get("node")
    name = f"{entry['id']} ({len(copies)} copies)" if len(copies) > 1 else str(entry["id"])
    model = (name, str(nodes or "-"), str(entry["status"]["value"]), _describe(entry), _vram(entry))
    if len(copies) < 2:
        return [model]
    return [model] + [
        (
            f"  copy {c['copy']}",
            str(c.get("node") or "-"),
            str(c["status"]),
            human_size(c["rss"]) if "rss" in c else "-",
            "",
        )
        for c in copies
    ]


def _ps(args: argparse.Namespace) -> int:
    try:
        listing = fetch_listing(args.url, router_key(args.api_key))
    except RouterUnavailable as exc:
        print(f"corral ps: {exc}", file=sys.stderr)
        return 1
    running = [e for e in listing["data"] if e.get("status", {}).get("value") in _RUNNING]
    rows = [row for entry in running for row in _rows(entry)]
    # On a cluster (--cluster), the node each worker runs on: a column only then.
    on_nodes = any(node != "-" for _, node, *_ in rows)
    node_width = max([len("NODE"), *(len(row[1]) for row in rows)]) if on_nodes else 0
    width = max([len("MODEL"), *(len(row[0]) for row in rows)])
    node_head = f"{'NODE':<{node_width}}  " if node_width else ""
    print(f"{'MODEL':<{width}}  {node_head}{'STATUS':<11}  {'MEMORY (RSS) / DOWNLOADED':<25}  VRAM")
    for name, node, status, detail, vram in rows:
        node_cell = f"{node:<{node_width}}  " if node_width else ""
        print(f"{name:<{width}}  {node_cell}{status:<11}  {detail:<25}  {vram}".rstrip())
    _print_queue(listing["data"])
    devices = listing.get("devices") or []
    if devices:  # each GPU as its driver says now: Corral's models and anything else
        width = max(len("GPU"), *(len(device["name"]) for device in devices))
        print(f"\n{'GPU':<{width}}  {'USED':<9}  {'FREE':<9}  {'TOTAL':<9}  DESCRIPTION")
        for device in devices:
            used, free, total = (human_size(device[key]) for key in ("used", "free", "total"))
            name, description = device["name"], device["description"]
            print(f"{name:<{width}}  {used:<9}  {free:<9}  {total:<9}  {description}")
    return 0


def _add_router_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        type=router_url,
        default=default_router_url(),
        help="the router's address (default from LLAMA_ARG_HOST/LLAMA_ARG_PORT: %(default)s)",
    )
    parser.add_argument("--api-key", default=None, help="key the router wants [LLAMA_API_KEY]")


def _parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(prog="corral")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str) -> argparse.ArgumentParser:
        summary = COMMAND_SUMMARIES[name]
        return commands.add_parser(
            name, help=summary, description=summary[0].upper() + summary[1:] + "."
        )

    pull = command("pull")
    pull.add_argument("model", help="org/repo[:TAG]; without a tag Q4_K_M, else Q8_0, else first")
    pull.add_argument("-hft", "--hf-token", default=None, help="hub token [HF_TOKEN]")
    ls = command("ls")
    ls.add_argument(
        "--models-dir",
        type=Path,
        default=os.environ.get("LLAMA_ARG_MODELS_DIR"),
        help="also list this directory's models [LLAMA_ARG_MODELS_DIR]",
    )
    ls.add_argument(
        "--models-preset",
        type=Path,
        default=os.environ.get("LLAMA_ARG_MODELS_PRESET"),
        help="also list this preset file's models [LLAMA_ARG_MODELS_PRESET]",
    )
    _add_router_flags(ls)
    rm = command("rm")
    rm.add_argument("model", help="org/repo:TAG")
    rm.add_argument(
        "-f", "--force", action="store_true", help="delete even while a router serves it"
    )
    _add_router_flags(rm)
    ps = command("ps")
    _add_router_flags(ps)
    top = command("top")
    _add_router_flags(top)
    add_top_flags(top)
    return parser


_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "pull": _pull,
    "ls": _ls,
    "rm": _rm,
    "ps": _ps,
    "top": run_top,
}
CACHE_COMMANDS = frozenset(_HANDLERS)


def cache_command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Each cache command's own parser, by name (``corral rm``'s for ``rm``)."""
    subparsers = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subparsers.choices)


def run_cache_command(command: str, argv: list[str]) -> int:
    # Parsed by the command's own parser, so a mistyped flag is matched against its flags.
    args = cache_command_parsers()[command].parse_args(argv)
    return _HANDLERS[command](args)
