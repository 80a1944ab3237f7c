"""One attempt to send a request to one replica.

The director (``gateway.flow.director``) tries the ranked replicas in turn; this module only
forwards. An attempt fails, leaving the request to the next replica, only while nothing has
reached the client: on a connect error, a timeout before the first byte, a 5xx or a 429. A stream
counts as started once its first event arrived. Client errors (other 4xx) are the client's and
pass through as the replica wrote them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from gateway.domain import Replica
from gateway.outcome import AttemptFailure
from gateway.proxy.http1 import Pool, Response, UpstreamError, UpstreamTimeout
from gateway.proxy.sse import EventSplitter

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
    # Set by the HTTP layer when the client disconnected (it then closes ``response``).
    client_gone: bool = False


@dataclass(frozen=True, slots=True)
class UpstreamRequest:
    """What every attempt of one request sends: ``body_for(replica)`` (the body with the model
    name that replica serves), extra raw header lines (CRLF-terminated), whether it streams."""

    path: str
    body_for: Callable[[Replica], bytes]
    headers: bytes
    stream: bool


class UpstreamCall:
    """One request's transport for the director: ``attempt`` sends it to one replica."""

    __slots__ = ("_pool", "_request")

    def __init__(self, pool: Pool, request: UpstreamRequest) -> None:
        self._pool = pool
        self._request = request

    async def attempt(self, replica: Replica) -> Answer | AttemptFailure:
        request = self._request
        started = time.perf_counter()
        response: Response | None = None
        try:
            response = await self._pool.post(replica.url, request.path, request.body_for(replica), request.headers)
            if response.status in RETRYABLE_STATUS:
                detail = (await response.read())[:300].decode(errors="replace")
                response.release()
                return AttemptFailure(replica.id, response.status, detail, time.perf_counter() - started)
            answer = Answer(replica, response.status, response, started)
            if request.stream and response.status == 200:
                await _read_first_event(answer)
            else:
                answer.body = await response.read()
                response.release()
            return answer
        except UpstreamError as exc:
            if response is not None:
                response.close()
            status = 504 if isinstance(exc, UpstreamTimeout) else 502
            return AttemptFailure(replica.id, status, str(exc), time.perf_counter() - started)


async def _read_first_event(answer: Answer) -> None:
    splitter = EventSplitter()
    while (chunk := await answer.response.next_chunk()) is not None:
        answer.first_events = splitter.complete(chunk)
        if answer.first_events:
            answer.first_event_at = time.perf_counter()
            answer.splitter = splitter
            return
    raise UpstreamError("stream ended before its first event")
