"""vLLM's disaggregated prefill as the proxy sends it (the flow of vLLM's P/D proxies): the
prompt to a prefill replica, then the answer from a decode replica.

1. The prefill request is the client's body with ``max_tokens`` 1, no stream, and
   ``kv_transfer_params`` asking for a remote decode (``do_remote_decode``).
2. The prefill replica answers with one token and the ``kv_transfer_params`` (where its KV
   blocks are) that the decode replica pulls from.
3. The decode request is the client's body with those parameters; its answer goes to the client.

A prefill that fails, or answers without parameters, and a decode whose answer is vLLM's error
before any token (its KV did not load: a 500, or a stream whose first event is an error) are
``AttemptFailure``s: nothing reached the client, so the director tries its next ranked replica
and the request is never lost. Which replicas prefill and decode is routing's choice, not this
module's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.domain import EngineRole, Replica
from gateway.outcome import AttemptFailure
from gateway.proxy.forward import Answer, UpstreamCall, UpstreamRequest
from gateway.proxy.http1 import Pool

# The APIs vLLM's P/D flow serves (a prompt, then tokens): the only requests routing may split.
SPLIT_PATHS = frozenset({"/v1/chat/completions", "/v1/completions"})

# What vLLM's P/D proxies send with the prefill request (the decode side is filled in by the
# prefill replica's answer).
REMOTE_DECODE = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                 "remote_block_ids": None, "remote_host": None, "remote_port": None}


def prefill_body(body: bytes) -> bytes:
    """The client's body as a prefill request: one token, not streamed, KV handed off."""
    fields = orjson.loads(body)
    fields.update(max_tokens=1, stream=False, kv_transfer_params=REMOTE_DECODE)
    for key in ("max_completion_tokens", "stream_options", "n"):
        fields.pop(key, None)
    return orjson.dumps(fields)


def decode_body(body: bytes, handoff: dict[str, Any]) -> bytes:
    """The client's body as the decode request that pulls the prefill's KV."""
    fields = orjson.loads(body)
    fields["kv_transfer_params"] = handoff
    return orjson.dumps(fields)


def handoff_of(answer_body: bytes) -> dict[str, Any] | None:
    """The ``kv_transfer_params`` a prefill replica answered with, if it handed its KV off."""
    try:
        params = orjson.loads(answer_body).get("kv_transfer_params")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return params if isinstance(params, dict) and params.get("do_remote_prefill") else None


def starts_with_error(first_events: bytes) -> bool:
    """Whether a stream's first events are vLLM's error event (a generation that failed before
    its first token, as a decode whose KV did not load)."""
    return first_events.lstrip().startswith(b'data: {"error"')


@dataclass(frozen=True, slots=True)
class PrefillThenDecode:
    """One request's transport through ``prefill`` then the replica the director tries, which
    decodes: ``attempt`` is an ``UpstreamCall``'s, so the director needs no other path."""

    pool: Pool
    request: UpstreamRequest
    prefill: Replica

    async def attempt(self, replica: Replica) -> Answer | AttemptFailure:
        started = time.perf_counter()
        handoff = await self._prefill(replica, started)
        if isinstance(handoff, AttemptFailure):
            return handoff
        decode = UpstreamRequest(self.request.path, lambda r: decode_body(self.request.body_for(r), handoff),
                                 self.request.headers, self.request.stream)
        answer = await UpstreamCall(self.pool, decode).attempt(replica)
        if isinstance(answer, Answer) and answer.status == 200 and starts_with_error(answer.first_events):
            answer.response.close()
            return AttemptFailure(replica.id, 500, f"decode on {replica.id} failed before its first token "
                                                   f"(KV from {self.prefill.id}): {answer.first_events[:200]!r}",
                                  time.perf_counter() - started)
        return answer

    async def _prefill(self, decode: Replica, started: float) -> dict[str, Any] | AttemptFailure:
        """The prefill's handoff, or why the decode replica cannot be tried with one."""
        prefill = UpstreamRequest(self.request.path, lambda r: prefill_body(self.request.body_for(r)),
                                  self.request.headers, stream=False)
        first = await UpstreamCall(self.pool, prefill).attempt(self.prefill)
        if isinstance(first, AttemptFailure):
            return AttemptFailure(decode.id, first.status, f"prefill on {self.prefill.id} failed: {first.detail}",
                                  time.perf_counter() - started)
        handoff = handoff_of(first.body) if first.status == 200 else None
        if handoff is None:
            return AttemptFailure(decode.id, 502, f"prefill on {self.prefill.id} answered {first.status} without "
                                                  f"kv_transfer_params: {first.body[:200]!r}", time.perf_counter() - started)
        return handoff


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """The transport of a decision that may split a request (``Decision.prefill_for``): a
    decode replica it pairs is tried after its prefill replica; any other replica takes the
    request whole. A prefill- or decode-role replica is never sent a client's request whole:
    the first would write no answer, the second would have no KV to answer from."""

    pool: Pool
    request: UpstreamRequest
    prefill_for: Mapping[str, Replica]

    async def attempt(self, replica: Replica) -> Answer | AttemptFailure:
        prefill = self.prefill_for.get(replica.id)
        if prefill is not None:
            return await PrefillThenDecode(self.pool, self.request, prefill).attempt(replica)
        if replica.engine.role is not EngineRole.BOTH:
            return AttemptFailure(replica.id, 503, f"{replica.engine.role.value}-role replica {replica.id} cannot "
                                                   "serve a request whole (no prefill paired with it)", 0.0)
        return await UpstreamCall(self.pool, self.request).attempt(replica)
