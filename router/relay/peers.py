"""Peers: other OpenAI-compatible servers whose models this router lists and relays to
(docs/scaling.md).

Each peer's model list is fetched at startup, on reload (``?reload=1``, SIGHUP) and every
``refresh`` seconds, in the background: a slow or dead peer delays nothing local. A peer that
cannot be listed keeps its last good list (and an explicit ``models`` list is served regardless),
so its models answer 502 with the reason rather than vanish into 404s.

A peer is any server on the network, so what the router takes from it is bounded
(docs/security.md, Peers): a listing's bytes and names, any other answer read whole.
"""

from __future__ import annotations

import ssl
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
import structlog
from anyio.abc import TaskGroup

from router.catalogue.listing import ListingStatus, ModelListing
from router.relay.peer_config import PeerConfig
from router.workers.worker_http import UpstreamError, WorkerClient

__all__ = ["LISTING_MAX_BYTES", "LISTING_MAX_NAMES", "Peer", "PeerRoute", "PeerSet", "PeerStats"]

_log = structlog.get_logger("corral.peers")
# A listing is a small question: a peer that takes longer is reported down, not waited on.
_LIST_SECONDS = 10.0
_CONNECT_SECONDS = 5.0
# A listing is read whole: an OpenAI-style one of 4,096 models with long descriptions fits.
LISTING_MAX_BYTES = 8 << 20
# Names kept from one listing, in the peer's order; the rest are left out (and logged). Every
# /models lists them all, so a peer must not make that arbitrarily long.
LISTING_MAX_NAMES = 4096
# Other answers read whole (stream lookups and stops) are small.
_WHOLE_MAX_BYTES = 1 << 20


class _ListedModel(msgspec.Struct):
    id: str


class _Listing(msgspec.Struct):
    data: list[_ListedModel]


@dataclass(slots=True)
class PeerStats:
    """What ``/metrics`` shows per peer (router.api.metrics)."""

    responses: Counter[int] = field(default_factory=Counter)  # by the peer's status
    errors: int = 0  # unreachable, cut mid-answer, refused our key
    seconds: float = 0.0  # waiting for answers' heads, summed


class Peer:
    def __init__(self, config: PeerConfig, stats: PeerStats) -> None:
        self.config = config
        self.stats = stats
        tls = ssl.create_default_context() if config.scheme == "https" else None
        self.client = WorkerClient(
            config.host,
            config.port,
            config.timeout,
            min(config.timeout, _CONNECT_SECONDS),
            tls=tls,
            party=f"peer '{config.name}'",
        )
        self.listed: tuple[str, ...] = ()  # the peer's own names, from its last good listing
        # What it answers for, as a set: a route is one lookup, whatever the peer lists.
        self._answers = frozenset(config.models or ())
        self.error: str | None = None  # why the last listing failed; None once one succeeds
        self.refreshed = anyio.Event()  # set after the first listing, good or not

    @property
    def name(self) -> str:
        return self.config.name

    def auth_headers(self) -> list[tuple[bytes, bytes]]:
        key = self.config.api_key
        return [(b"authorization", b"Bearer " + key.encode())] if key is not None else []

    async def exchange(
        self, method: str, target: bytes, body: bytes | None, limit: int = _WHOLE_MAX_BYTES
    ) -> tuple[int, bytes]:
        """A whole small request and answer (stream lookups and stops), with the peer's key;
        an answer over ``limit`` bytes is an :class:`UpstreamError`."""
        headers = [(b"content-type", b"application/json")] if body is not None else []
        path = self.config.base_path.encode() + target
        answer = await self.client.request(method, path, headers + self.auth_headers(), body)
        try:
            return answer.status, await answer.read(limit)
        finally:
            answer.close()

    def remote_names(self) -> tuple[str, ...]:
        """The peer's names this router serves, in order (listings)."""
        return self.config.models if self.config.models is not None else self.listed

    def answers_for(self, remote: str) -> bool:
        return remote in self._answers

    async def refresh(self) -> None:
        try:
            with anyio.fail_after(min(self.config.timeout, _LIST_SECONDS)):
                status, body = await self.exchange("GET", b"/v1/models", None, LISTING_MAX_BYTES)
            if status != 200:
                raise UpstreamError(f"listing its models answered {status}: {_reason(body)}")
            listing = msgspec.json.decode(body, type=_Listing)
        except (UpstreamError, TimeoutError, msgspec.ValidationError, msgspec.DecodeError) as exc:
            error = str(exc) or "no answer in time"
            if error != self.error:  # once per cause, not every refresh
                _log.warning("peer not listed", peer=self.name, url=self.config.url, error=error)
            self.error = error
        else:
            self._take(tuple(dict.fromkeys(model.id for model in listing.data)))
        self.refreshed.set()

    def _take(self, listed: tuple[str, ...]) -> None:
        kept = listed[:LISTING_MAX_NAMES]
        if kept != self.listed or self.error is not None or not self.refreshed.is_set():
            if len(kept) < len(listed):  # logged with each new listing, as "peer listed" is
                _log.warning("peer listing truncated", peer=self.name, listed=len(listed),
                             kept=len(kept))  # fmt: skip
            _log.info("peer listed", peer=self.name, models=list(kept))
        self.listed, self.error = kept, None
        if self.config.models is None:
            self._answers = frozenset(kept)

    async def refresh_every(self, seconds: float) -> None:
        await self.refresh()
        while seconds > 0:
            await anyio.sleep(seconds)
            await self.refresh()


def _reason(body: bytes) -> str:
    """The message of an error answer (the error JSON's, else its first text), kept short."""
    try:
        message = msgspec.json.decode(body)["error"]["message"]
    except (msgspec.DecodeError, KeyError, TypeError):
        message = body.decode(errors="replace").strip()
    return str(message)[:200] or "no reason given"


@dataclass(frozen=True, slots=True)
class PeerRoute:
    peer: Peer
    remote: str  # the model's name on the peer (without this router's prefix)


class PeerSet:
    """Every configured peer, and which names they answer for."""

    def __init__(self) -> None:
        self._peers: dict[str, tuple[Peer, anyio.CancelScope]] = {}
        self._stats: dict[str, PeerStats] = {}
        self._group: TaskGroup | None = None

    @property
    def peers(self) -> list[Peer]:
        return [peer for peer, _ in self._peers.values()]

    def stats(self) -> dict[str, PeerStats]:
        """Counters by peer name; they outlive a reload that changes the peer's settings."""
        return dict(self._stats)

    def start(self, group: TaskGroup, configs: Iterable[PeerConfig]) -> None:
        self._group = group
        self.configure(configs)

    def configure(self, configs: Iterable[PeerConfig]) -> list[Peer]:
        """Apply a (re)loaded preset: new or changed peers start listing, removed ones stop.

        Returns the peers kept unchanged, which a reload lists again.
        """
        assert self._group is not None, "start() first"
        wanted = {config.name: config for config in configs}
        kept: list[Peer] = []
        for name, (peer, scope) in list(self._peers.items()):
            if wanted.get(name) == peer.config:
                kept.append(peer)
                continue
            scope.cancel()
            # Answers in progress finish on their connections; only idle ones close now.
            self._group.start_soon(peer.client.aclose)
            del self._peers[name]
        peers: dict[str, tuple[Peer, anyio.CancelScope]] = {}
        for name, config in wanted.items():  # file order decides which peer wins a name
            if name in self._peers:
                peers[name] = self._peers[name]
                continue
            peer = Peer(config, self._stats.setdefault(name, PeerStats()))
            scope = anyio.CancelScope()
            peers[name] = (peer, scope)
            self._group.start_soon(_in_scope, scope, peer.refresh_every, config.refresh)
        self._peers = peers
        return kept

    async def reload(self, configs: Iterable[PeerConfig]) -> None:
        """A reload: apply the preset, then wait for every peer's listing (each bounded)."""
        kept = self.configure(configs)
        async with anyio.create_task_group() as group:
            for peer in kept:
                group.start_soon(peer.refresh)
        for peer in self.peers:
            await peer.refreshed.wait()

    def route(self, name: str, local: bool) -> PeerRoute | None:
        """The peer that answers for ``name``: the first that lists it, unless a local model
        has the name and that peer does not say ``prefer = peer``."""
        for peer in self.peers:
            prefix = peer.config.prefix
            if not name.startswith(prefix) or (local and not peer.config.prefer):
                continue
            remote = name.removeprefix(prefix)
            if peer.answers_for(remote):
                return PeerRoute(peer, remote)
        return None

    def listing(self, created: int, is_local: Callable[[str], bool]) -> list[ModelListing]:
        """``/models`` entries for every name a peer answers for."""
        entries: dict[str, ModelListing] = {}
        for peer in self.peers:
            for remote in peer.remote_names():
                name = peer.config.prefix + remote
                route = self.route(name, is_local(name)) if name not in entries else None
                if route is not None:
                    entries[name] = _entry(route.peer, name, route.remote, created)
        return list(entries.values())

    async def aclose(self) -> None:
        for peer, scope in self._peers.values():
            scope.cancel()
            await peer.client.aclose()


async def _in_scope(scope: anyio.CancelScope, run: Callable[[float], Any], seconds: float) -> None:
    with scope:
        await run(seconds)


def _entry(peer: Peer, name: str, remote: str, created: int) -> ModelListing:
    status = ListingStatus(value="remote", peer=peer.name, url=peer.config.url)
    if peer.error is not None:
        status.error = peer.error
    return ModelListing(
        id=name,
        owned_by=peer.name,
        created=created,
        status=status,
        source="peer",
        can_remove=False,
        peer=peer.name,
        remote_id=remote,
    )
