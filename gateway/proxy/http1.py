"""A lean HTTP/1.1 client for talking to replicas: keep-alive pools per replica, httptools parsing,
streamed bodies with back-pressure, idle timeouts.

Why not aiohttp: the proxy spent ~30% of its CPU per request inside aiohttp's client (headers
multidicts, timeouts as tasks, tracing hooks). Replicas speak plain HTTP/1.1, so a client that
writes one buffer and parses with the same C parser uvicorn uses is enough. ``https://`` replicas
are spoken to over TLS (the event loop's own), with the context ``gateway.proxy.tls`` gives.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

import httptools

# A replica (vLLM's uvicorn) closes idle keep-alive connections after 5 s: never reuse one idle
# this long, and close it ourselves then, so a server that keeps them longer (nginx: 75 s) does not
# hold the gateway's descriptors for connections it will never use again.
REUSE_IDLE_S = 4.0
# Past this many unread body bytes the upstream socket stops being read (slow client back-pressure).
HIGH_WATER_BYTES = 1 << 20


class UpstreamError(ConnectionError):
    """The replica could not be reached or broke the exchange."""


class UpstreamTimeout(UpstreamError, TimeoutError):
    """No byte from the replica for the idle timeout (or no connection within the connect timeout)."""


# Where a connection goes: host, port, and the TLS context (None: plain TCP).
Endpoint = tuple[str, int, ssl.SSLContext | None]


class _Connection(asyncio.Protocol):
    """One TCP connection to a replica, carrying one exchange at a time."""

    def __init__(self, pool: Pool, key: Endpoint) -> None:
        self._pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: Response | None = None
        self.closed = False
        self.idle_since = 0.0
        self.used = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:  # bytes while idle: the server is misbehaving, drop the connection
            self.close()
            return
        response.last_activity = time.monotonic()
        response.bytes_seen = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            response.fail(UpstreamError(f"malformed response from replica: {exc}"))
            self.close()
            return
        # One wake-up per read, however many chunks of the chunked encoding it held (a stream
        # that arrived in one read is ~20 of them).
        response.wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.response is not None and not self.response.complete:
            self.response.fail(UpstreamError("replica closed the connection"))

    def pause_writing(self) -> None:  # requests are small; nothing to pause
        pass

    def resume_writing(self) -> None:
        pass

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        assert self.response is not None
        self.response.raw_headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        assert self.response is not None
        self.response.status = self.parser.get_status_code()
        self.response.keep_alive = self.parser.should_keep_alive()
        self.response.headers_done()

    def on_body(self, body: bytes) -> None:
        assert self.response is not None
        self.response.feed(body)

    def on_message_complete(self) -> None:
        assert self.response is not None
        self.response.finish()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Response:
    """A replica's response: status and headers once awaited; the body read whole or streamed."""

    __slots__ = (
        "_conn", "_loop", "status", "raw_headers", "keep_alive", "complete", "last_activity", "bytes_seen",
        "_chunks", "_buffered", "_waiter", "_error", "_headers_waiter", "_released", "_idle_timeout_s", "_timer",
    )

    def __init__(self, conn: _Connection, loop: asyncio.AbstractEventLoop, idle_timeout_s: float) -> None:
        self._conn = conn
        self._loop = loop
        self.status = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.keep_alive = False
        self.complete = False
        self.last_activity = time.monotonic()
        self.bytes_seen = False
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._headers_waiter: asyncio.Future[None] = loop.create_future()
        self._released = False
        self._idle_timeout_s = idle_timeout_s
        self._timer = loop.call_later(idle_timeout_s, self._check_idle)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop this response is read on (cheaper than asking asyncio for it)."""
        return self._loop

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.raw_headers:
            if key == name:
                return value
        return None

    # fed by the connection
    def headers_done(self) -> None:
        if not self._headers_waiter.done():
            self._headers_waiter.set_result(None)

    def feed(self, body: bytes) -> None:
        """Body bytes parsed from a read; the connection wakes the consumer once the read is parsed."""
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > HIGH_WATER_BYTES and self._conn.transport is not None:
            self._conn.transport.pause_reading()

    def finish(self) -> None:
        self.complete = True
        self._timer.cancel()
        self.wake()

    def fail(self, error: BaseException) -> None:
        if self._error is None and not self.complete:
            self._error = error
        self._timer.cancel()
        if not self._headers_waiter.done():
            self._headers_waiter.set_exception(error)
            self._headers_waiter.exception()  # retrieved: a failure before headers is raised by start()
        self.wake()

    def wake(self) -> None:
        """Let a consumer waiting in ``next_chunk`` run."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _check_idle(self) -> None:
        remaining = self.last_activity + self._idle_timeout_s - time.monotonic()
        if remaining > 0:
            self._timer = self._loop.call_later(remaining, self._check_idle)
            return
        self.fail(UpstreamTimeout(f"no data from the replica for {self._idle_timeout_s:g} s"))
        self._conn.close()

    # consumer side
    async def start(self) -> None:
        await self._headers_waiter

    async def next_chunk(self) -> bytes | None:
        """The body bytes that arrived since the last call (chunked transfer encoding already
        decoded), waiting for some if none did; ``None`` once the body is complete.

        Whatever arrived since the last read goes out as one piece: one write to the client
        instead of one per upstream chunk when the consumer fell behind. A plain coroutine, not
        an async generator: the stream relay calls it once per upstream read, and resuming
        generator frames cost more than the call."""
        while True:
            chunks = self._chunks
            if chunks:
                chunk = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
                chunks.clear()
                if self._buffered > HIGH_WATER_BYTES and self._conn.transport is not None:
                    self._conn.transport.resume_reading()
                self._buffered = 0
                return chunk
            if self._error is not None:
                raise self._error
            if self.complete:
                return None
            self._waiter = self._loop.create_future()
            await self._waiter
            self._waiter = None

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        """Body chunks as they arrive (see ``next_chunk``)."""
        while (chunk := await self.next_chunk()) is not None:
            yield chunk

    async def read(self) -> bytes:
        parts = [chunk async for chunk in self.iter_chunks()]
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def release(self) -> None:
        """Hand the connection back: to the pool when the exchange finished cleanly, else closed."""
        if self._released:
            return
        self._released = True
        self._timer.cancel()
        conn = self._conn
        conn.response = None
        if self.complete and self.keep_alive and self._error is None and not conn.closed:
            conn._pool._put_back(conn)
        else:
            conn.close()

    def close(self) -> None:
        """Abandon the exchange (the client went away): the replica sees the connection drop."""
        self._conn.close()
        self.release()


def _plain(_: str) -> ssl.SSLContext | None:
    return None


class Pool:
    """Keep-alive connections to every replica, keyed by base URL. ``tls`` gives the TLS context
    for a base URL (None: plain TCP), asked once per URL."""

    def __init__(self, *, connect_timeout_s: float, idle_timeout_s: float, max_idle_per_host: int = 256,
                 tls: Callable[[str], ssl.SSLContext | None] = _plain, reuse_idle_s: float = REUSE_IDLE_S) -> None:
        self._connect_timeout_s = connect_timeout_s
        self._idle_timeout_s = idle_timeout_s
        self._max_idle = max_idle_per_host
        self._reuse_idle_s = reuse_idle_s
        # One timer for the whole pool, not one per connection: it runs while anything is idle.
        self._sweep: asyncio.TimerHandle | None = None
        self._tls = tls
        self._idle: dict[Endpoint, list[_Connection]] = {}
        self._hosts: dict[str, tuple[Endpoint, bytes]] = {}
        # The loop the pool runs on, looked up once: on Python 3.11 every
        # asyncio.get_running_loop() is a getpid() syscall (a fork check).
        self._loop: asyncio.AbstractEventLoop | None = None

    async def post(self, base_url: str, path: str, body: bytes, headers: bytes = b"") -> Response:
        """POST ``body`` (JSON) and return once the status line and headers arrived. ``headers`` are
        extra raw header lines, each ending in CRLF."""
        endpoint, host_header = self._host(base_url)
        head = (
            b"POST " + path.encode() + b" HTTP/1.1\r\nHost: " + host_header
            + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
            + b"\r\n" + headers + b"\r\n"
        )
        for attempt in range(2):
            conn, reused = await self._acquire(endpoint)
            response = Response(conn, self._running_loop(), self._idle_timeout_s)
            conn.response = response
            assert conn.transport is not None
            conn.transport.write(head + body)
            try:
                await response.start()
                return response
            except UpstreamTimeout:
                response.release()
                raise
            except UpstreamError:
                response.release()
                # A reused connection the replica had just closed: nothing was processed, try a new one.
                if not (reused and attempt == 0 and not response.bytes_seen):
                    raise
        raise UpstreamError("unreachable")

    def _host(self, base_url: str) -> tuple[Endpoint, bytes]:
        known = self._hosts.get(base_url)
        if known is None:
            parts = urlsplit(base_url)
            host = parts.hostname or "127.0.0.1"
            port = parts.port or (443 if parts.scheme == "https" else 80)
            known = self._hosts[base_url] = ((host, port, self._tls(base_url)), f"{host}:{port}".encode())
        return known

    async def _acquire(self, endpoint: Endpoint) -> tuple[_Connection, bool]:
        host, port, tls = endpoint
        idle = self._idle.get(endpoint)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self._reuse_idle_s:
                return conn, True
            conn.close()
        loop = self._running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                # With a context, the handshake (SNI: ``host``; certificate and host name verified)
                # is part of connecting, inside the same timeout.
                _, conn = await loop.create_connection(lambda: _Connection(self, endpoint), host, port, ssl=tls)
        except TimeoutError as exc:
            raise UpstreamTimeout(f"no connection to {host}:{port} within {self._connect_timeout_s:g} s") from exc
        except OSError as exc:
            raise UpstreamError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from exc
        return conn, False

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def _put_back(self, conn: _Connection) -> None:
        idle = self._idle.setdefault(conn.key, [])
        if len(idle) >= self._max_idle:
            conn.close()
            return
        conn.idle_since = time.monotonic()
        idle.append(conn)
        if self._sweep is None:
            self._sweep = self._running_loop().call_later(self._reuse_idle_s, self._close_stale)

    def _close_stale(self) -> None:
        """Close the connections idle past the reuse window. Each list is in the order connections
        came back (the oldest first; ``_acquire`` takes from the end), so the stale ones are a prefix."""
        self._sweep = None
        horizon = time.monotonic() - self._reuse_idle_s
        for idle in self._idle.values():
            stale = 0
            while stale < len(idle) and (idle[stale].closed or idle[stale].idle_since <= horizon):
                idle[stale].close()
                stale += 1
            del idle[:stale]
        if any(self._idle.values()):
            self._sweep = self._running_loop().call_later(self._reuse_idle_s, self._close_stale)

    def close(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
