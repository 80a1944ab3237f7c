"""Split requests in virtual time, as the proxy runs them (``gateway.proxy.disaggregated``): the
prompt goes to the prefill replica's engine as a one-token request that hands its KV off; when
that engine reports the KV ready, the request goes to the decode replica's engine, which holds
it while the KV crosses the link (the simulator's ``kvtransfer``: KV bytes per token over the
profile's link) and then decodes. The client's clock runs through both legs: its TTFT is the
prefill leg's time plus the decode engine's first token (transfer included).

Stated simplification: the director's attempt is the decode replica from the moment the
prefill leg starts, and a leg that fails later (the prefill engine aborts, or the KV does not
load under vLLM's ``fail`` policy) ends the request as failed, not retried on the next pair as
the proxy's is (the proxy learns of it before any byte reached the client; the replay's
transport has already returned). No replay draws KV failures unless a profile injects them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gateway.flow import Replica
from serving.sim.engine.events import Finished, SimRequest

PREFILL_LEG = ":prefill"


@dataclass(frozen=True, slots=True)
class Handoff:
    """A request whose prompt a prefill engine is computing: the decode replica that answers it,
    its request as the decode engine takes it, and when the prefill leg started."""

    decode: Replica
    request: SimRequest
    started_s: float


def prefill_leg(request: SimRequest) -> SimRequest:
    """The prefill engine's request: the prompt, one token, its KV handed off."""
    return dataclasses.replace(request, request_id=request.request_id + PREFILL_LEG, max_tokens=1, min_tokens=0,
                               natural_tokens=None, remote_decode=True)


def decode_leg(request: SimRequest) -> SimRequest:
    """The decode engine's request: the client's, its prompt's KV coming over the link."""
    return dataclasses.replace(request, remote_prefill=True)


def is_prefill_leg(request_id: str) -> bool:
    return request_id.endswith(PREFILL_LEG)


def failed_leg(handoff: Handoff, at_s: float) -> Finished:
    """The client's request ended without an answer at ``at_s`` (its prefill leg failed)."""
    request = handoff.request
    return Finished(request.request_id, at_s, "error", request.prompt_tokens, 0, 0, 0.0, None, at_s - handoff.started_s)
