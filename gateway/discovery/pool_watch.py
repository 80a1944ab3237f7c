"""One InferencePool's members, kept current by list and watch, as Kubernetes controllers do.

A round: GET the pool (its selector and ports), list its pods by ``labelSelector``, then watch
them from the list's ``resourceVersion`` (bookmarks on; each watch ended by the server after
``watch_timeout_s`` and resumed from the last version seen) until ``resync_s`` has passed, when
the next round lists afresh: a lost event costs at most that long. The pool is read again between
watches: a changed selector or port list starts a new round at once. A 410 Gone (the version was
compacted away), as the watch's status or as an ERROR event, starts a new round at once; any
other failure keeps the members last known and retries after ``retry_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from gateway.config.engine_groups import GROUP_LABEL
from gateway.config.pool import InferencePoolDiscovery
from gateway.discovery.api import DiscoveryFailed, KubernetesApi, WatchExpired
from gateway.discovery.pool_members import Members, PoolSpec, members, pool_spec
from gateway.domain import Replica

log = logging.getLogger(__name__)

POOL_PATH = "/apis/inference.networking.k8s.io/v1/namespaces/{namespace}/inferencepools/{name}"
PODS_PATH = "/api/v1/namespaces/{namespace}/pods"


class PoolWatcher:
    """Keeps ``members`` current in a background task; ``on_change`` is called (synchronously,
    from that task) whenever the replica list changes."""

    def __init__(self, target: InferencePoolDiscovery, api: KubernetesApi, on_change: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.target = target
        self._api = api
        self._on_change = on_change
        self._clock = clock
        namespace = target.namespace or api.settings.namespace
        self._pool_path = POOL_PATH.format(namespace=namespace, name=target.name)
        self._pods_path = PODS_PATH.format(namespace=namespace)
        self._pods: dict[str, dict[str, Any]] = {}
        self._members = Members(())
        self._listed = asyncio.Event()  # set by the first list, good or failed
        self._error: DiscoveryFailed | None = None
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0  # lists made (the first, resyncs, after a 410 or a failure)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"duet-pool-{self.target.model}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def members(self) -> Members:
        """The members now; waits (bounded) for the first list, and raises DiscoveryFailed while
        no list ever succeeded."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._listed.wait(), timeout=3 * self._api.settings.timeout_s)
        if self.rounds == 0:
            raise self._error or DiscoveryFailed(f"InferencePool {self.target.name}: not listed yet")
        return self._members

    async def _run(self) -> None:
        while True:
            try:
                await self._round()
            except WatchExpired as exc:
                log.info("InferencePool %s: %s; listing again", self.target.name, exc)
            except DiscoveryFailed as exc:
                if self._error is None:
                    log.warning("InferencePool %s: %s; keeping %d replica(s), retrying every %.1f s", self.target.name,
                                exc, len(self._members.replicas), self.target.retry_s)
                self._error = exc
                self._listed.set()
                await asyncio.sleep(self.target.retry_s)

    async def _round(self) -> None:
        """One list, then watches resumed from it until ``resync_s`` has passed or the pool changed."""
        spec = pool_spec(await self._api.get_json(self._pool_path, {}))
        listing = await self._api.get_json(self._pods_path, {"labelSelector": spec.label_selector})
        self._pods = {_name(pod): pod for pod in listing.get("items") or ()}
        self.rounds += 1
        if self._error is not None:
            log.info("InferencePool %s: listed again", self.target.name)
            self._error = None
        self._publish(spec)
        self._listed.set()
        version = str((listing.get("metadata") or {}).get("resourceVersion") or "")
        deadline = self._clock() + self.target.resync_s
        while (left := deadline - self._clock()) > 0:
            version = await self._watch(spec, version, min(left, self.target.watch_timeout_s))
            if (now := pool_spec(await self._api.get_json(self._pool_path, {}))) != spec:
                log.info("InferencePool %s changed (%s -> %s)", self.target.name, spec, now)
                return

    async def _watch(self, spec: PoolSpec, version: str, timeout_s: float) -> str:
        """Apply the events of one watch; the last resourceVersion seen."""
        params = {"labelSelector": spec.label_selector, "resourceVersion": version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(max(1, math.ceil(timeout_s)))}
        async for event in self._api.watch(self._pods_path, params, timeout_s + self._api.settings.timeout_s):
            kind, pod = event.get("type"), event["object"]
            if kind == "ERROR":
                message = f"watch: {pod.get('code')} {pod.get('reason')}: {pod.get('message')}"
                raise WatchExpired(message) if pod.get("code") == 410 else DiscoveryFailed(message)
            version = str((pod.get("metadata") or {}).get("resourceVersion") or version)
            if kind == "DELETED":
                self._pods.pop(_name(pod), None)
            elif kind in ("ADDED", "MODIFIED"):
                self._pods[_name(pod)] = pod
            else:
                continue  # BOOKMARK: only the version moves
            self._publish(spec)
        return version

    def _publish(self, spec: PoolSpec) -> None:
        found = members(self._pods.values(), spec, self.target)
        if found.unlabelled and found.unlabelled != self._members.unlabelled:
            log.warning("InferencePool %s: Ready pod(s) without a known %s label (or, for a variant with engine "
                        "groups, %s label) left out: %s", self.target.name, self.target.variant_label, GROUP_LABEL,
                        ", ".join(found.unlabelled))
        changed = found.replicas != self._members.replicas
        self._members = found
        if changed:
            self._on_change()


def _name(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


class PoolVariantSource:
    """One variant's share of a pool's members (the ``ReplicaSource`` discovery resolves)."""

    def __init__(self, watcher: PoolWatcher, variant: str) -> None:
        self._watcher = watcher
        self.model = watcher.target.model
        self.variant = variant

    async def list_replicas(self) -> tuple[Replica, ...]:
        found = await self._watcher.members()
        return tuple(r for r in found.replicas if r.variant == self.variant)
