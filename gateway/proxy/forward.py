"""Sending a request to the ranked replicas until one answers.

A replica is tried only while nothing has reached the client: on a connect error, a timeout before
the first byte, a 5xx or a 429 the next ranked replica gets the request. A stream counts as started
once its first event arrived; until then it may still move. Client errors (other 4xx) are the
client's and pass through as the replica wrote them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gateway.domain import Outcome, Replica
from gateway.errors import DeadlineExceeded, NoHealthyReplica, RateLimited, RequestError, UpstreamFailed
from gateway.proxy.http1 import Pool, Response, UpstreamError, UpstreamTimeout
from gateway.proxy.sse import EventSplitter
from gateway.state.decodes import DecodeClaim, DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.store import StateStore

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(slots=True)
class Answer:
    """A replica's answer that will reach the client. For streams, ``first_events`` (one block of
    complete SSE events) were read to prove the stream started; the rest is read from
    ``response`` through ``splitter``, which holds any unfinished event."""

    replica: Replica
    status: int
    response: Response
    started_at: float
    body: bytes = b""
    first_events: bytes = b""
    splitter: EventSplitter | None = None
    first_event_at: float | None = None
    failed_attempts: int = 0
    # The request's entry in the decode ledger on ``replica`` (see gateway.state.decodes).
    decode_ticket: int | None = None
    # Set by the HTTP layer when the client disconnected (it then closes ``response``).
    client_gone: bool = False


@dataclass(frozen=True, slots=True)
class Failure:
    replica_id: str
    status: int
    detail: str


class Forwarder:
    """Runs the attempt loop, passing every attempt through the state store (begin/finish)."""

    def __init__(
        self, pool: Pool, store: StateStore, max_attempts: int, backlog: PrefillBacklog, decodes: DecodeLedger
    ) -> None:
        self._pool = pool
        self._store = store
        self._max_attempts = max_attempts
        self._backlog = backlog
        self._decodes = decodes

    async def send(
        self,
        ranked: Sequence[Replica],
        path: str,
        body_for: Callable[[Replica], bytes],
        headers: bytes,
        stream: bool,
        prompt_tokens: int = 0,
        claim: DecodeClaim | None = None,
    ) -> Answer:
        """``headers``: extra raw request header lines (CRLF-terminated) for the replica.
        ``prompt_tokens`` count in the replica's prefill backlog until its first token (or end).
        ``claim`` enters the request in the decode ledger on the replica that takes it; the
        caller ends that entry (``DecodeLedger.done`` with the answer's ticket) when the request
        ends, a failed attempt's entry ends here."""
        failures: list[Failure] = []
        attempts = 0
        for replica in ranked:
            if attempts >= self._max_attempts:
                break
            admission = await self._store.begin(replica.id)
            if not admission.admitted:
                continue
            attempts += 1
            self._backlog.add(replica.id, prompt_tokens)
            ticket = None if claim is None else self._decodes.claim(replica.id, claim)
            answer = None
            try:
                answer = await self._attempt(replica, path, body_for(replica), headers, stream, failures)
            finally:
                self._backlog.done(replica.id, prompt_tokens)  # prefilled (first event or whole body), or failed
                if answer is None and ticket is not None:
                    self._decodes.done(replica.id, ticket)
            if answer is not None:
                answer.failed_attempts = len(failures)
                answer.decode_ticket = ticket
                return answer
        raise _exhausted(failures, attempts)

    async def _attempt(
        self, replica: Replica, path: str, body: bytes, headers: bytes, stream: bool, failures: list[Failure]
    ) -> Answer | None:
        started = time.perf_counter()
        response: Response | None = None
        try:
            response = await self._pool.post(replica.url, path, body, headers)
            if response.status in RETRYABLE_STATUS:
                detail = (await response.read())[:300].decode(errors="replace")
                response.release()
                await self._fail(replica, response.status, started, failures, detail)
                return None
            answer = Answer(replica, response.status, response, started)
            if stream and response.status == 200:
                await self._read_first_event(answer)
            else:
                answer.body = await response.read()
                response.release()
            return answer
        except UpstreamError as exc:
            if response is not None:
                response.close()
            status = 504 if isinstance(exc, UpstreamTimeout) else 502
            await self._fail(replica, status, started, failures, str(exc))
            return None

    async def _read_first_event(self, answer: Answer) -> None:
        splitter = EventSplitter()
        while (chunk := await answer.response.next_chunk()) is not None:
            answer.first_events = splitter.complete(chunk)
            if answer.first_events:
                answer.first_event_at = time.perf_counter()
                answer.splitter = splitter
                return
        raise UpstreamError("stream ended before its first event")

    async def _fail(self, replica: Replica, status: int, started: float, failures: list[Failure], detail: str) -> None:
        failures.append(Failure(replica.id, status, detail))
        outcome = Outcome(replica.id, False, status, None, time.perf_counter() - started, 0, 0)
        await self._store.finish(outcome)


def _exhausted(failures: list[Failure], attempts: int) -> RequestError:
    if attempts == 0:
        return NoHealthyReplica("No replica could take the request (all circuit breakers open).", retry_after_s=1.0)
    summary = "; ".join(f"{f.replica_id}: {f.status} {f.detail}" for f in failures)
    if all(f.status == 429 for f in failures):
        return RateLimited(f"Every replica is overloaded ({summary}).", retry_after_s=1.0)
    if all(f.status == 504 for f in failures):
        return DeadlineExceeded(f"No replica answered in time ({summary}).")
    return UpstreamFailed(f"Every replica tried failed ({summary}).")
