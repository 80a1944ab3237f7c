"""The running gateway: its current config, and the parts built from it (replica state, monitor,
upstream connections, telemetry, and the director that runs each request with its bookkeeping
hooked on). The app's lifespan builds one and passes it to the handlers; nothing here is global."""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

import aiohttp

from gateway.access.build import build_access
from gateway.autoscaling.demand_keeper import DemandKeeper
from gateway.autoscaling.gauge import FleetSignal
from gateway.config.active import ActiveConfig
from gateway.config.types import DuetConfig
from gateway.config.watch import ConfigWatcher
from gateway.discovery.api import ApiSettings, KubernetesApi
from gateway.discovery.loop import DiscoveryLoop, refresh_interval_s
from gateway.discovery.resolve import Discovery
from gateway.domain import Replica
from gateway.flow.affinity import ResponseHomes
from gateway.flow.bookkeeping import gateway_hooks, routing_hooks
from gateway.flow.director import Director, Ledgers
from gateway.flow.waiting_room import WaitingRoom
from gateway.parity.journal import InMemoryJournal, Journal, RedisJournal
from gateway.parity.metrics import ParityMetrics
from gateway.parity.online import OnlineParity, PolicyHost
from gateway.parity.ports import ParityTools
from gateway.parity.shadow import OnConclusion, ShadowParts
from gateway.proxy.disaggregated import PlannedCall
from gateway.proxy.forward import UpstreamCall, UpstreamRequest
from gateway.proxy.http1 import Pool
from gateway.proxy.tls import UpstreamTls
from gateway.sessions import Sessions
from gateway.sessions.shared import SharedSessions
from gateway.state.breaker import BreakerPolicy
from gateway.state.decodes import DecodeLedger
from gateway.state.demand import InMemoryDemand
from gateway.state.monitor import MonitorSettings, ReplicaMonitor
from gateway.state.prefill import PrefillBacklog
from gateway.state.prefix_index import InMemoryPrefixIndex, PrefixIndex
from gateway.state.redis.demand import SharedDemand
from gateway.state.redis.link import LinkSettings, LinkStatus, RedisLink
from gateway.state.redis.prefix_index import SharedPrefixIndex
from gateway.state.redis.store import RedisStateStore
from gateway.state.store import InMemoryStateStore, StateStore, StoreSettings
from gateway.telemetry import Telemetry
from gateway.tracing.off import NO_TRACING, Tracing

log = logging.getLogger(__name__)


def store_settings(config: DuetConfig) -> StoreSettings:
    breaker = config.state.breaker
    return StoreSettings(
        stale_after_s=config.state.stale_after_s,
        breaker=BreakerPolicy(failure_threshold=breaker.failure_threshold, cooldown_s=breaker.cooldown_s),
    )


def with_state_url(config: DuetConfig, state_url: str | None) -> DuetConfig:
    """``config`` with its store switched to Redis at ``state_url`` (``duet serve --state``)."""
    if state_url is None:
        return config
    return dataclasses.replace(config, state=dataclasses.replace(config.state, store="redis", redis_url=state_url))


def build_tracing(config: DuetConfig) -> Tracing:
    """OpenTelemetry when the config names a collector, else the null object (set at start)."""
    endpoint = config.server.otlp_traces_endpoint
    if endpoint is None:
        return NO_TRACING
    from gateway.tracing.otlp import OtelTracing  # OpenTelemetry is imported only when it is used

    return OtelTracing.otlp(endpoint, config.server.otlp_service_name)


def build_link(config: DuetConfig, telemetry: Telemetry) -> RedisLink | None:
    """The Redis link when the config's store is Redis, else None."""
    if config.state.store != "redis":
        return None
    settings = LinkSettings(config.state.redis_url, timeout_s=config.state.redis_timeout_s)
    return RedisLink(settings, on_error=lambda kind: telemetry.redis_errors.labels(kind).inc())


def build_prefix_index(config: DuetConfig, link: RedisLink | None, gateway_id: str) -> PrefixIndex:
    """This gateway's prefix index, shared with the others through Redis when the state is
    (sized once at start: a reload that changes ``routing.prefix_cache`` needs a restart)."""
    blocks = config.policy.prefix_cache.blocks_per_replica
    if link is None:
        return InMemoryPrefixIndex(blocks)
    return SharedPrefixIndex(link, blocks, gateway_id=gateway_id, prefix=config.state.redis_prefix,
                             refresh_s=config.state.refresh_s, timeout_s=config.state.redis_timeout_s * 4)


def build_sessions(config: DuetConfig, link: RedisLink | None, gateway_id: str) -> Sessions | SharedSessions:
    """Where sessions sit, shared with the other gateways through Redis when the state is."""
    remembered = config.policy.sessions.remembered
    if link is None:
        return Sessions(remembered)
    return SharedSessions(link, remembered, gateway_id=gateway_id, prefix=config.state.redis_prefix,
                          refresh_s=config.state.refresh_s, timeout_s=config.state.redis_timeout_s * 4)


def build_demand(config: DuetConfig, link: RedisLink | None) -> InMemoryDemand | SharedDemand:
    """What traffic the autoscaled models get, summed over the gateways through Redis when the
    state is shared (each gateway sees only its share)."""
    if link is None:
        return InMemoryDemand(time.monotonic)
    return SharedDemand(link, prefix=config.state.redis_prefix)


class Gateway:
    """``state_url`` overrides the config's store with Redis at that URL; the store is chosen once
    at start (a reload that changes ``state.store`` needs a restart). ``kubernetes``: how to reach
    the API server for variants with ``discovery`` (default: the pod's own service account)."""

    def __init__(
        self, config: DuetConfig, *, config_path: str | None = None, store: StateStore | None = None,
        state_url: str | None = None, kubernetes: ApiSettings | None = None, parity: ParityTools | None = None,
    ) -> None:
        config = with_state_url(config, state_url)
        self._state_url = state_url
        # The config as written; ``current`` holds it with discovered replicas filled in.
        self._declared = config
        self._kubernetes = kubernetes
        self._discovery_loop: DiscoveryLoop | None = None
        self.current = ActiveConfig.of(config)
        self.config_path = config_path
        self.telemetry = Telemetry()
        self._link = build_link(config, self.telemetry)
        if (link := self._link) is not None:
            self.telemetry.watch_redis(lambda: link.status.up)
        self._shared_store: RedisStateStore | None = None
        gateway_id = f"{socket.gethostname()}-{os.getpid()}-{os.urandom(3).hex()}"
        self.prefixes = build_prefix_index(config, self._link, gateway_id)
        if store is None and self._link is not None:
            store = self._shared_store = RedisStateStore(
                self._link, store_settings(config), gateway_id=gateway_id, prefix=config.state.redis_prefix,
                refresh_s=config.state.refresh_s,
            )
        self.store: StateStore = store or InMemoryStateStore(store_settings(config))
        self.access = build_access(lambda: self.current.config, self._link, self.telemetry)
        self.telemetry.watch_replicas(lambda: self.current.config.replicas, self.store.snapshot)
        server = config.server
        self._tls = UpstreamTls(lambda: self.current.config)
        self._pool = Pool(connect_timeout_s=server.upstream_connect_timeout_s, idle_timeout_s=server.upstream_idle_timeout_s,
                          tls=self._tls.context_for)
        backlog, decodes = PrefillBacklog(), DecodeLedger()
        waiting_room = WaitingRoom(server.max_queued, waited=self.telemetry.queue_wait.observe)
        self.telemetry.watch_waiting(lambda: len(waiting_room))
        self.sessions = build_sessions(config, self._link, gateway_id)
        hooks = gateway_hooks(routing_hooks(backlog, decodes, self.store, waiting_room, self.prefixes, self.sessions),
                              self.access, self.telemetry)
        self.response_homes = ResponseHomes()
        hooks.dispatched.append(self.response_homes.dispatched)
        hooks.done.append(self.response_homes.done)
        # The demand the desired-replicas gauge sizes the fleet for, computed at each scrape.
        self.demand = build_demand(config, self._link)
        DemandKeeper(self.demand).subscribe(hooks)
        self.fleet = FleetSignal(lambda: self.current.config, self.demand, self.store.lengths)
        self.telemetry.watch_fleet(self.fleet.variant_needs)
        self.tracing = build_tracing(config)
        self.tracing.subscribe(hooks)
        ledgers = Ledgers(backlog, decodes, self.prefixes, self.sessions)
        self.director = Director(lambda: self.current, self.store, ledgers, waiting_room, hooks, time.perf_counter)
        # Parity's revisions by month (shared when the store is): every gateway's savings report reads them.
        self.parity_journal: Journal = InMemoryJournal() if self._link is None else RedisJournal(
            self._link, config.state.redis_prefix)
        # Shadow checks (online parity) when the command shell gave the verifiers: the last
        # dispatched hook (draws, and taps a drawn answer) and the last done hook (starts the check).
        self.online_parity = None if parity is None else self._online_parity(parity, Ledgers(backlog, decodes, self.prefixes),
                                                                              waiting_room)
        if self.online_parity is not None:
            hooks.dispatched.append(self.online_parity.dispatched)
            hooks.done.append(self.online_parity.done)
        # Health checks and scrapes use their own client: they must never queue behind proxied streams.
        self._session: aiohttp.ClientSession | None = None
        self._monitor: ReplicaMonitor | None = None
        self._watcher: ConfigWatcher | None = None

    async def start(self) -> None:
        config = self.current.config
        if self._link is not None:
            self._link.start()
            await self._connect_store(self._link, config)
        if self._shared_store is not None:
            await self._shared_store.start()
        if isinstance(self.prefixes, SharedPrefixIndex):
            self.prefixes.start()
        if isinstance(self.sessions, SharedSessions):
            self.sessions.start()
        if isinstance(self.demand, SharedDemand):
            self.demand.start()
        await self.access.start()
        self._session = aiohttp.ClientSession(auto_decompress=False, skip_auto_headers=("User-Agent",))
        if config.discovery or config.pools:
            config = await self._start_discovery(config, self._session)
        self._monitor = ReplicaMonitor(
            config.replicas, self.store,
            settings=MonitorSettings(config.state.health_interval_s, config.state.scrape_interval_s, config.state.timeout_s),
            client=self._session, tls=self._tls.context_for,
        )
        await self._monitor.start()
        if self._discovery_loop is not None:
            self._discovery_loop.start()
        if self.config_path is not None:
            self._watcher = ConfigWatcher(self.config_path, self.apply)
            self._watcher.start()

    async def stop(self) -> None:
        if self.online_parity is not None:
            await self.online_parity.stop()
        if self._watcher is not None:
            await self._watcher.stop()
        if self._discovery_loop is not None:
            await self._discovery_loop.stop()
        if self._monitor is not None:
            await self._monitor.stop()
        if self._session is not None:
            await self._session.close()
        await self.access.stop()
        self._pool.close()
        if isinstance(self.prefixes, SharedPrefixIndex):
            await self.prefixes.aclose()
        if isinstance(self.sessions, SharedSessions):
            await self.sessions.aclose()
        if isinstance(self.demand, SharedDemand):
            await self.demand.aclose()
        await self.store.aclose()
        self.tracing.shutdown()  # exports the spans still batched

    async def apply(self, config: DuetConfig) -> None:
        """Switch to a new, already validated config."""
        config = with_state_url(config, self._state_url)
        self._declared = config
        if self._discovery_loop is not None:
            config = await self._discovery_loop.resolve(config)
        self.current = ActiveConfig.of(config)
        if self._monitor is not None:
            await self._monitor.update_replicas(config.replicas)

    def _online_parity(self, tools: ParityTools, ledgers: Ledgers, waiting_room: WaitingRoom) -> OnlineParity:
        """Online parity's parts: its checks run through a director of their own, with routing's
        bookkeeping only (no quotas, no request metrics) on the live ledgers, so the live requests'
        routing sees the shadow work and the shadow work sees the live requests' slack."""
        hooks = routing_hooks(ledgers.backlog, ledgers.decodes, self.store, waiting_room, ledgers.prefixes)
        director = Director(lambda: self.current, self.store, ledgers, waiting_room, hooks, time.perf_counter)
        metrics = ParityMetrics(self.telemetry.registry)
        host = PolicyHost(self.config_path, lambda: self.current.config, self.reload, self.apply)

        def parts(on_conclusion: OnConclusion) -> ShadowParts:
            return ShadowParts(director, ledgers, lambda request: UpstreamCall(self._pool, request), tools.judge, metrics,
                               on_conclusion, lambda: self.current.config)

        return OnlineParity(host, tools, metrics, parts, self.parity_journal)

    def store_status(self) -> LinkStatus | None:
        """Whether the shared store answers (None: no shared store is configured)."""
        return None if self._link is None else self._link.status

    def upstream(self, request: UpstreamRequest, prefill_for: Mapping[str, Replica] | None = None) -> PlannedCall:
        """The transport that sends ``request`` to the replicas the director tries; those
        ``prefill_for`` pairs (a split decision's) after their prefill replica."""
        return PlannedCall(self._pool, request, prefill_for or {})

    async def reload(self) -> bool:
        if self._watcher is None:
            return False
        return await self._watcher.reload()

    async def _connect_store(self, link: RedisLink, config: DuetConfig) -> None:
        """Know at start whether the configured Redis answers: a mistyped redis_url must not pass
        for N independent gateways with unenforced limits and one log line."""
        status = await link.connect()
        if not status.up:
            url = urlsplit(config.state.redis_url)
            log.error("redis at %s:%s did not answer at start (%s): /ready says not ready until it does; meanwhile "
                      "routing uses this gateway's own state and quotas fail %s (state.quota_failure)",
                      url.hostname, url.port or 6379, status.problem, config.state.quota_failure)

    async def _start_discovery(self, declared: DuetConfig, session: aiohttp.ClientSession) -> DuetConfig:
        """Resolve the replicas once before the monitor's first round (so /ready counts them), and
        set up the loop that keeps them current. Adding discovery on reload needs a restart."""
        settings = self._kubernetes or ApiSettings.in_cluster(os.environ)
        discovery = Discovery(KubernetesApi(settings, session))
        self._discovery_loop = DiscoveryLoop(
            discovery, declared=lambda: self._declared, current=lambda: self.current.config,
            on_change=self._replicas_changed, interval_s=refresh_interval_s(declared) or 5.0,
        )
        resolved = await discovery.resolve(declared)
        self.current = ActiveConfig(resolved, self.current.counters)
        return resolved

    async def _replicas_changed(self, config: DuetConfig) -> None:
        self.current = ActiveConfig(config, self.current.counters)
        if self._monitor is not None:
            await self._monitor.update_replicas(config.replicas)
