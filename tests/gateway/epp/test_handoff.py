"""How the director's attempts resolve from the one response Envoy reports: the replicas it went
past failed, the one that answered answered, and a replica it never got is charged nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.domain import Replica
from gateway.epp.handoff import NOT_HANDED, EnvoyAnswer, EnvoyHandoff, endpoint_of
from gateway.epp.wire import ResponseHead
from gateway.flow import AttemptFailure
from gateway.proxy.forward import UpstreamRequest

A, B, C = (Replica(f"m/standard/{i}", "m", "standard", f"http://10.0.0.{i}:8000") for i in range(3))
FAST = Replica("m/fast/0", "m", "fast", "http://10.0.1.1:8000")


def exchange(ranked: Sequence[Replica], max_attempts: int = 3) -> Any:
    """What the handoff reads of an exchange: the ranked replicas, the attempts allowed and made."""
    return SimpleNamespace(plan=SimpleNamespace(decision=SimpleNamespace(ranked=tuple(ranked))),
                           config=SimpleNamespace(server=SimpleNamespace(max_attempts=max_attempts)), attempts=1)


def request() -> UpstreamRequest:
    return UpstreamRequest("/v1/chat/completions", lambda r: f'{{"model":"m-{r.variant}"}}'.encode(), b"", False)


def handoff(ranked: Sequence[Replica], head: ResponseHead | None, fallbacks: int = 2,
            max_attempts: int = 3) -> tuple[EnvoyHandoff, list[tuple[list[str], bytes]]]:
    sent: list[tuple[list[str], bytes]] = []

    async def send_pick(endpoints: Sequence[str], body: bytes) -> None:
        sent.append((list(endpoints), body))

    async def next_head() -> ResponseHead | None:
        return head

    return EnvoyHandoff(exchange(ranked, max_attempts), request(), send_pick, next_head, lambda: 0.0, fallbacks), sent


def attempts(hand: EnvoyHandoff, replicas: Sequence[Replica]) -> list[EnvoyAnswer | AttemptFailure]:
    async def run() -> list[EnvoyAnswer | AttemptFailure]:
        return [await hand.attempt(r) for r in replicas]
    return asyncio.run(run())


def test_endpoint_of() -> None:
    assert endpoint_of(A) == "10.0.0.0:8000"
    assert endpoint_of(Replica("x", "m", "v", "https://pod.local")) == "pod.local:443"


def test_the_pick_lists_fallbacks_that_take_the_same_body_within_the_attempts_left() -> None:
    hand, sent = handoff([A, FAST, B, C], ResponseHead(200, endpoint_of(A), True, False), fallbacks=2)
    attempts(hand, [A])
    assert sent == [([endpoint_of(A), endpoint_of(B), endpoint_of(C)], b'{"model":"m-standard"}')]
    hand, sent = handoff([A, B, C], ResponseHead(200, endpoint_of(A), True, False), fallbacks=2, max_attempts=2)
    attempts(hand, [A])
    assert sent[0][0] == [endpoint_of(A), endpoint_of(B)]
    hand, sent = handoff([A, B, C], ResponseHead(200, endpoint_of(A), True, False), fallbacks=0)
    attempts(hand, [A])
    assert sent[0][0] == [endpoint_of(A)]  # what an ORIGINAL_DST cluster takes


def statuses(results: list[EnvoyAnswer | AttemptFailure]) -> list[object]:
    return ["answer" if isinstance(r, EnvoyAnswer) else r.status for r in results]


@pytest.mark.parametrize(("head", "expected"), [
    (ResponseHead(200, "10.0.0.0:8000", True, False), ["answer"]),
    (ResponseHead(200, None, True, False), ["answer"]),  # the data plane did not say: the primary
    (ResponseHead(503, "10.0.0.0:8000", True, False), ["answer"]),  # the replica's own 503 reaches the client
    (ResponseHead(200, "10.0.0.1:8000", True, False), [502, "answer", NOT_HANDED]),
    (ResponseHead(503, None, False, False, "upstream_reset_before_response_started{connection_failure}"), [502, 502, NOT_HANDED]),
    (ResponseHead(503, None, False, False, "no_healthy_upstream"), [NOT_HANDED, NOT_HANDED, NOT_HANDED]),
])
def test_each_attempt_resolves_from_the_response(head: ResponseHead, expected: list[object]) -> None:
    hand, _ = handoff([A, B, C], head, fallbacks=1)
    assert statuses(attempts(hand, [A, B, C][:len(expected)])) == expected


def test_a_stream_closed_before_the_response_is_the_clients_leaving() -> None:
    hand, _ = handoff([A], None)
    with pytest.raises(asyncio.CancelledError):
        attempts(hand, [A])
