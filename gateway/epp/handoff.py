"""The endpoint picker's transport for the director: Envoy carries the bytes.

The director tries the ranked replicas in turn (``Transport.attempt``), as it does on the proxy
path. Here the first attempt hands the data plane the pick: that replica first, then up to
``fallbacks`` of the ranked replicas after it that take the very same body (the same served
model name), within the attempts left; a data plane that takes a list (Envoy's override_host
load balancer) goes down it on a refused connection. Envoy's ORIGINAL_DST cluster takes one
endpoint only: ``fallbacks`` 0, the default. The response's headers then
say which endpoint answered, so each attempt of the director resolves from them: the replicas
Envoy went past failed (502), the one that answered answered.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from gateway.domain import Replica
from gateway.epp.wire import ResponseHead
from gateway.flow import AttemptFailure, Exchange
from gateway.proxy.forward import UpstreamRequest

# The status of an attempt on a replica the data plane was never handed: a 4xx, so replica state
# counts it nowhere (``gateway.state.outcomes``): the replica never saw the request.
NOT_HANDED = 421
# (endpoints in order, the body they all take) -> sent to the data plane.
SendPick = Callable[[Sequence[str], bytes], Awaitable[None]]
# The response's headers once the data plane has them (None: it closed the stream first).
NextHead = Callable[[], Awaitable[ResponseHead | None]]


def endpoint_of(replica: Replica) -> str:
    """A replica's ``host:port``, as the protocol names endpoints."""
    return _endpoint(replica.url)


@functools.lru_cache(maxsize=4096)  # a few per request, over a fleet's few URLs
def _endpoint(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


@dataclass(frozen=True, slots=True)
class EnvoyAnswer:
    """A replica's response that Envoy is passing to the client: its headers as the picker saw
    them, and when the pick was handed over (the director's clock)."""

    replica: Replica
    head: ResponseHead
    started_at: float


class EnvoyHandoff:
    """One request's transport: the pick handed over once, every attempt read from the answer."""

    def __init__(self, exchange: Exchange, request: UpstreamRequest, send_pick: SendPick, next_head: NextHead,
                 clock: Callable[[], float], fallbacks: int = 0) -> None:
        self._exchange = exchange
        self._fallbacks = fallbacks
        self._request = request
        self._send_pick = send_pick
        self._next_head = next_head
        self._clock = clock
        self.handed: tuple[Replica, ...] = ()
        self._head: ResponseHead | None = None
        self._started = 0.0

    async def attempt(self, replica: Replica) -> EnvoyAnswer | AttemptFailure:
        if not self.handed:
            await self._hand_over(replica)
        head = self._head
        assert head is not None
        duration = self._clock() - self._started
        if replica not in self.handed:
            return AttemptFailure(replica.id, NOT_HANDED, "not among the endpoints handed to the data plane", 0.0)
        served = head.served if head.served is not None else endpoint_of(self.handed[0])
        if head.via_upstream and served == endpoint_of(replica):
            return EnvoyAnswer(replica, head, self._started)
        if head.via_upstream:
            return AttemptFailure(replica.id, 502, f"the data plane went on to {served}", duration)
        if head.upstream_failed:
            return AttemptFailure(replica.id, 502, f"no connection ({head.details})", duration)
        # The data plane could not use the pick at all (no such host in its cluster, a header it
        # cannot parse): its configuration's fault, not the replica's.
        return AttemptFailure(replica.id, NOT_HANDED, f"the data plane did not send it ({head.details})", duration)

    async def _hand_over(self, replica: Replica) -> None:
        body = self._request.body_for(replica)
        self.handed = self.fallbacks(replica, body)
        self._started = self._clock()
        await self._send_pick([endpoint_of(r) for r in self.handed], body)
        self._head = await self._next_head()
        if self._head is None:  # the client left (or Envoy stopped): no replica's fault
            raise asyncio.CancelledError("the data plane closed the stream before the response")

    def fallbacks(self, replica: Replica, body: bytes) -> tuple[Replica, ...]:
        """``replica``, then up to ``fallbacks`` ranked replicas after it that take ``body`` as it
        is, within the attempts the request has left."""
        if not self._fallbacks:
            return (replica,)
        exchange = self._exchange
        ranked = exchange.plan.decision.ranked
        left = exchange.config.server.max_attempts - exchange.attempts + 1
        after = ranked[ranked.index(replica) + 1:] if replica in ranked else ()
        same = [r for r in after if self._request.body_for(r) == body]
        return (replica, *same)[:max(1, min(left, 1 + self._fallbacks))]
