"""gRPC's transport, HTTP/2 over cleartext (h2c), as much of it as a gRPC server needs, on the
asyncio loop itself: frames in and out of one ``asyncio.Protocol`` per connection, gRPC's
length-prefixed messages assembled per stream, flow control both ways.

Why not grpcio's ``grpc.aio``: it hands every message between its C core's polling thread and
the loop, and the endpoint picker exchanges about ten messages per HTTP request, so that handoff
was most of the picker's cost (measured with ``make bench-overhead-envoy``: the null picker on
``grpc.aio`` spent more CPU per request than Duet as a whole proxy). Here a message costs a
frame parse and a protobuf decode; writes made in one step of the loop leave in one syscall.

What a connection does: the client's preface, SETTINGS (ours: large receive windows, replenished
once half is used), PING answered, WINDOW_UPDATE and the peer's INITIAL_WINDOW_SIZE and
MAX_FRAME_SIZE honoured when sending, HEADERS (+ CONTINUATION) decoded with ``hpack``, DATA
split into gRPC messages, RST_STREAM and a lost connection cancel the stream's handler (until
the call has ended: ``Stream.end_now``), GOAWAY on shutdown. No server push, no priorities, no
compressed messages (a gRPC server may refuse them).
"""

from __future__ import annotations

import asyncio
import struct
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from hpack import Decoder

from gateway.epp.hpack_blocks import RESPONSE_HEADERS, changes_table, trailers

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
PUSH_PROMISE = 5
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY = 0x4, 0x8, 0x20
INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE = 4, 5
PROTOCOL_ERROR, REFUSED_STREAM = 1, 7
# Our receive windows (stream and connection), replenished once half is used: one WINDOW_UPDATE
# per half-gigabyte rather than one per frame.
WINDOW = 1 << 30
DEFAULT_WINDOW = 65_535
KNOWN_BLOCKS = 64  # header blocks remembered per connection (a client sends a few shapes)
_HEAD = struct.Struct(">BHBBI")  # length (24 bits as 8 + 16), type, flags, stream id
_SETTING = struct.Struct(">HI")
_WORD = struct.Struct(">I")


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    size = len(payload)
    return _HEAD.pack(size >> 16, size & 0xFFFF, kind, flags, stream_id) + payload


class StreamReset(Exception):
    """The peer reset the stream (RST_STREAM) or the connection went away."""


class Stream:
    """One HTTP/2 stream of a gRPC call: its request headers, the messages received (bytes, in
    order), and what the server sends back."""

    def __init__(self, connection: Connection, stream_id: int, headers: dict[str, str]) -> None:
        self.id = stream_id
        self.headers = headers
        self._connection = connection
        self._inbox: deque[bytes] = deque()
        self._partial = b""  # the start of a message whose remaining bytes are still to come
        self._waiter: asyncio.Future[None] | None = None
        self.remote_ended = False
        self.reset = False
        self.compressed = False  # a message came compressed (this server supports none)
        self.send_window = connection.peer_window
        self.unacked = 0  # received bytes not yet given back to the peer's window
        self.pending: deque[tuple[bytes, bool]] = deque()  # DATA waiting for window (payload, end)
        self.drained: asyncio.Future[None] | None = None
        self.headers_sent = False
        self.closed = False  # our END_STREAM went out
        self.task: asyncio.Task[Any] | None = None

    async def read(self) -> bytes | None:
        """The next message; None once the peer ended its side. StreamReset if it reset it."""
        while not self._inbox:
            if self.reset:
                raise StreamReset(f"stream {self.id} reset by the peer")
            if self.remote_ended:
                return None
            self._waiter = self._connection.loop.create_future()
            await self._waiter
        return self._inbox.popleft()

    async def write(self, message: bytes) -> None:
        """One gRPC message (uncompressed), after the response headers if none went yet."""
        if self.closed:
            raise StreamReset(f"stream {self.id} already ended")
        if not self.headers_sent:
            self.headers_sent = True
            self._connection.emit(frame(HEADERS, END_HEADERS, self.id, RESPONSE_HEADERS))
        await self._connection.send_data(self, b"\x00" + _WORD.pack(len(message)) + message, False)

    async def finish(self, status: int, message: str = "") -> None:
        """The call's status in the trailers, which end the stream (the headers too if no message went)."""
        if self.closed or self.reset:
            return
        if self.pending:
            await self._connection.send_data(self, b"", False)  # waits until what is queued went out
        self._close(status, message)

    def end_now(self) -> None:
        """Ends the call with status OK in the same write as the messages before it, unless some
        still wait for flow-control window (then ``finish`` ends it later). A reset arriving
        after this no longer cancels the handler: the call is over for the client."""
        if not (self.closed or self.reset or self.pending):
            self._close(0, "")

    def _close(self, status: int, message: str) -> None:
        block = trailers(status, message)
        if not self.headers_sent:
            self.headers_sent = True
            block = RESPONSE_HEADERS + block
        self.closed = True
        self._connection.emit(frame(HEADERS, END_HEADERS | END_STREAM, self.id, block))
        self._connection.forget(self)

    def received(self, payload: bytes, end: bool) -> None:
        data = self._partial + payload if self._partial else payload
        start, size = 0, len(data)
        while size - start >= 5:
            length = _WORD.unpack_from(data, start + 1)[0]
            if size - start - 5 < length:
                break
            if data[start]:
                self.compressed = True
            self._inbox.append(data[start + 5:start + 5 + length])
            start += 5 + length
        self._partial = data[start:] if start < size else b""
        self.remote_ended = self.remote_ended or end
        self._wake()

    def cancel(self) -> None:
        self.reset = True
        self._wake()
        if self.drained is not None and not self.drained.done():
            self.drained.set_exception(StreamReset(f"stream {self.id} reset by the peer"))
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None


class Connection(asyncio.Protocol):
    """One client's HTTP/2 connection; ``on_stream`` starts a call's handler for each new stream."""

    def __init__(self, on_stream: Callable[[Stream], None], on_close: Callable[[Connection], None]) -> None:
        self.loop = asyncio.get_running_loop()
        self._on_stream = on_stream
        self._on_close = on_close
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._preface_seen = False
        self._decoder = Decoder()
        self._known_blocks: dict[bytes, dict[str, str]] = {}  # see _decoded
        self.streams: dict[int, Stream] = {}
        self._last_stream = 0
        self._header_block: tuple[int, int, bytearray] | None = None  # (stream id, flags, fragments)
        self.peer_window = DEFAULT_WINDOW  # the peer's INITIAL_WINDOW_SIZE (our send window per stream)
        self._send_window = DEFAULT_WINDOW  # the connection's
        self._max_frame = 16_384
        self._unacked = 0
        self._out: list[bytes] = []
        self._closing = False

    # ---- out ----
    def emit(self, data: bytes) -> None:
        """Queue ``data``; what a step of the loop queues leaves together once that step is done."""
        if not self._out:
            self.loop.call_soon(self._flush)
        self._out.append(data)

    def _flush(self) -> None:
        if self._out and self._transport is not None and not self._transport.is_closing():
            self._transport.write(b"".join(self._out))
        self._out.clear()

    async def send_data(self, stream: Stream, payload: bytes, end: bool) -> None:
        """``payload`` as DATA frames within the flow-control windows; waits while they are closed."""
        if stream.reset:
            raise StreamReset(f"stream {stream.id} reset by the peer")
        if payload:
            stream.pending.append((payload, end))
        self._send_pending(stream)
        while stream.pending:
            if stream.drained is None or stream.drained.done():
                stream.drained = self.loop.create_future()
            await stream.drained

    def _send_pending(self, stream: Stream) -> None:
        while stream.pending:
            payload, end = stream.pending[0]
            size = min(len(payload), self._max_frame, stream.send_window, self._send_window)
            if size <= 0 and payload:
                return
            stream.send_window -= size
            self._send_window -= size
            last = size == len(payload)
            self.emit(frame(DATA, END_STREAM if end and last else 0, stream.id, payload[:size]))
            if last:
                stream.pending.popleft()
            else:
                stream.pending[0] = (payload[size:], end)
        if stream.drained is not None and not stream.drained.done():
            stream.drained.set_result(None)

    def forget(self, stream: Stream) -> None:
        self.streams.pop(stream.id, None)

    def goaway(self) -> None:
        """No new streams: the ones open finish (shutdown's first step)."""
        self._closing = True
        self.emit(frame(GOAWAY, 0, 0, _WORD.pack(self._last_stream) + _WORD.pack(0)))

    def close(self) -> None:
        if self._transport is not None:
            self._flush()
            self._transport.close()

    # ---- in ----
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports are not its subclasses
        settings = _SETTING.pack(INITIAL_WINDOW_SIZE, WINDOW)
        self.emit(frame(SETTINGS, 0, 0, settings) + frame(WINDOW_UPDATE, 0, 0, _WORD.pack(WINDOW - DEFAULT_WINDOW)))

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        for stream in list(self.streams.values()):
            stream.cancel()
        self.streams.clear()
        self._on_close(self)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        start = 0
        if not self._preface_seen:
            if len(buffer) < len(PREFACE):
                return
            if not buffer.startswith(PREFACE):
                return self._fail("not an HTTP/2 client preface")
            self._preface_seen, start = True, len(PREFACE)
        size = len(buffer)
        while size - start >= 9:
            high, low, kind, flags, stream_id = _HEAD.unpack_from(buffer, start)
            length = high << 16 | low
            if size - start - 9 < length:
                break
            payload = bytes(buffer[start + 9:start + 9 + length])
            start += 9 + length
            self._frame(kind, flags, stream_id & 0x7FFFFFFF, payload)
            if self._transport is None:
                return
        del buffer[:start]

    def _frame(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if self._header_block is not None and kind != CONTINUATION:
            return self._fail("a header block interrupted")
        if kind == DATA:
            self._data(flags, stream_id, payload)
        elif kind == HEADERS:
            self._headers(flags, stream_id, payload)
        elif kind == CONTINUATION:
            self._continuation(flags, stream_id, payload)
        elif kind == WINDOW_UPDATE:
            self._window_update(stream_id, _WORD.unpack(payload)[0] & 0x7FFFFFFF)
        elif kind == SETTINGS and not flags & ACK:
            self._settings(payload)
        elif kind == PING and not flags & ACK:
            self.emit(frame(PING, ACK, 0, payload))
        elif kind == RST_STREAM:
            if (stream := self.streams.pop(stream_id, None)) is not None:
                stream.cancel()
        elif kind == GOAWAY:
            self._closing = True
        elif kind == PUSH_PROMISE:
            self._fail("a client may not push")
        # PRIORITY and unknown types: nothing to do

    def _data(self, flags: int, stream_id: int, payload: bytes) -> None:
        flow = len(payload)
        if flags & PADDED:
            payload = payload[1:len(payload) - payload[0]]
        self._unacked += flow
        if self._unacked > WINDOW // 2:
            self.emit(frame(WINDOW_UPDATE, 0, 0, _WORD.pack(self._unacked)))
            self._unacked = 0
        stream = self.streams.get(stream_id)
        if stream is None:  # a stream we already ended or reset: its data is dropped
            return
        stream.unacked += flow
        if stream.unacked > WINDOW // 2:
            self.emit(frame(WINDOW_UPDATE, 0, stream_id, _WORD.pack(stream.unacked)))
            stream.unacked = 0
        stream.received(payload, bool(flags & END_STREAM))

    def _headers(self, flags: int, stream_id: int, payload: bytes) -> None:
        if flags & PADDED:
            payload = payload[1:len(payload) - payload[0]]
        if flags & PRIORITY:
            payload = payload[5:]
        self._header_block = (stream_id, flags, bytearray(payload))
        if flags & END_HEADERS:
            self._header_block_done()

    def _continuation(self, flags: int, stream_id: int, payload: bytes) -> None:
        if self._header_block is None or self._header_block[0] != stream_id:
            return self._fail("CONTINUATION without its HEADERS")
        self._header_block[2].extend(payload)
        if flags & END_HEADERS:
            self._header_block_done()

    def _header_block_done(self) -> None:
        assert self._header_block is not None
        stream_id, flags, block = self._header_block
        self._header_block = None
        headers = self._decoded(bytes(block))
        if (open_stream := self.streams.get(stream_id)) is not None:  # the client's trailers
            open_stream.received(b"", bool(flags & END_STREAM))
            return
        if stream_id <= self._last_stream or stream_id % 2 == 0:
            return  # trailers of a stream already forgotten
        self._last_stream = stream_id
        if self._closing:
            self.emit(frame(RST_STREAM, 0, stream_id, _WORD.pack(REFUSED_STREAM)))  # try elsewhere
            return
        stream = Stream(self, stream_id, headers)
        self.streams[stream_id] = stream
        if flags & END_STREAM:
            stream.remote_ended = True
        self._on_stream(stream)

    def _decoded(self, block: bytes) -> dict[str, str]:
        """A header block's headers. A block that leaves the decoder's table as it is (Envoy's
        ext_proc calls send the same one on every stream once the table holds their headers)
        means the same until a block changes the table: such blocks are remembered, the rest
        decoded (about 30 us each)."""
        if (known := self._known_blocks.get(block)) is not None:
            return known
        headers = {str(name): str(value) for name, value in self._decoder.decode(block)}
        if changes_table(block):  # what earlier blocks meant may not hold
            self._known_blocks.clear()
        else:
            if len(self._known_blocks) >= KNOWN_BLOCKS:
                self._known_blocks.clear()
            self._known_blocks[block] = headers
        return headers

    def _window_update(self, stream_id: int, increment: int) -> None:
        if stream_id == 0:
            self._send_window += increment
            for stream in list(self.streams.values()):
                if stream.pending:
                    self._send_pending(stream)
        elif (one := self.streams.get(stream_id)) is not None:
            one.send_window += increment
            self._send_pending(one)

    def _settings(self, payload: bytes) -> None:
        for offset in range(0, len(payload) - len(payload) % 6, 6):
            key, value = _SETTING.unpack_from(payload, offset)
            if key == INITIAL_WINDOW_SIZE:
                delta, self.peer_window = value - self.peer_window, value
                for stream in self.streams.values():
                    stream.send_window += delta
            elif key == MAX_FRAME_SIZE:
                self._max_frame = value
        self.emit(frame(SETTINGS, ACK, 0))
        for stream in list(self.streams.values()):
            if stream.pending:
                self._send_pending(stream)

    def _fail(self, why: str) -> None:
        self.emit(frame(GOAWAY, 0, 0, _WORD.pack(self._last_stream) + _WORD.pack(PROTOCOL_ERROR) + why.encode()))
        self.close()
