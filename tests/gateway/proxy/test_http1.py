"""The lean upstream client against real asyncio servers on loopback."""

from __future__ import annotations

import asyncio

import pytest

from gateway.proxy.http1 import Pool, UpstreamError, UpstreamTimeout


class Server:
    """A tiny HTTP/1.1 server whose answer each test scripts: ``handler(reader, writer)``."""

    def __init__(self, handler):
        self.handler = handler
        self.connections = 0

    async def __aenter__(self):
        async def serve(reader, writer):
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()


async def read_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    return head, await reader.readexactly(length)


def json_response(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


def run(coro):
    return asyncio.run(coro)


def test_post_reads_body_and_reuses_the_connection():
    async def handler(reader, writer):
        while True:
            _, body = await read_request(reader)
            writer.write(json_response(b'{"echo":' + body + b"}"))
            await writer.drain()

    async def scenario():
        async with Server(handler) as server:
            pool = Pool(connect_timeout_s=1, idle_timeout_s=5)
            for i in range(3):
                response = await pool.post(server.url, "/v1/x", b'{"i":%d}' % i, b"x-request-id: r\r\n")
                assert response.status == 200 and response.header(b"content-type") == b"application/json"
                assert await response.read() == b'{"echo":{"i":%d}}' % i
                response.release()
            assert server.connections == 1
            pool.close()

    run(scenario())


def test_chunked_stream_arrives_piece_by_piece():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for i in range(3):
            event = b"data: %d\n\n" % i
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await asyncio.sleep(0.01)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async def scenario():
        async with Server(handler) as server:
            pool = Pool(connect_timeout_s=1, idle_timeout_s=5)
            response = await pool.post(server.url, "/s", b"{}")
            chunks = [c async for c in response.iter_chunks()]
            assert chunks == [b"data: 0\n\n", b"data: 1\n\n", b"data: 2\n\n"]
            response.release()
            pool.close()

    run(scenario())


def test_connection_cut_mid_body_raises():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()
        writer.transport.abort()

    async def scenario():
        async with Server(handler) as server:
            pool = Pool(connect_timeout_s=1, idle_timeout_s=5)
            response = await pool.post(server.url, "/s", b"{}")
            received = []
            with pytest.raises(UpstreamError):
                async for chunk in response.iter_chunks():
                    received.append(chunk)
            assert received == [b"hello"]
            response.close()

    run(scenario())


def test_silent_replica_times_out():
    async def handler(reader, writer):
        await read_request(reader)
        await asyncio.sleep(5)

    async def scenario():
        async with Server(handler) as server:
            pool = Pool(connect_timeout_s=1, idle_timeout_s=0.2)
            started = asyncio.get_running_loop().time()
            with pytest.raises(UpstreamTimeout):
                await pool.post(server.url, "/s", b"{}")
            assert asyncio.get_running_loop().time() - started < 2

    run(scenario())


def test_refused_connection_is_an_upstream_error():
    async def scenario():
        async with Server(lambda r, w: asyncio.sleep(0)) as server:
            url = server.url
        pool = Pool(connect_timeout_s=1, idle_timeout_s=1)
        with pytest.raises(UpstreamError, match="cannot connect"):
            await pool.post(url, "/s", b"{}")

    run(scenario())


def test_keepalive_closed_by_the_server_is_retried_on_a_new_connection():
    """The replica drops a kept-alive connection without answering (its keep-alive timeout raced
    our request): the request goes again on a fresh connection, once."""
    async def handler(reader, writer):
        _, body = await read_request(reader)
        writer.write(json_response(body))
        await writer.drain()
        if body == b"1":
            await read_request(reader)
            writer.transport.abort()

    async def scenario():
        async with Server(handler) as server:
            pool = Pool(connect_timeout_s=1, idle_timeout_s=5)
            first = await pool.post(server.url, "/x", b"1")
            assert await first.read() == b"1"
            first.release()
            second = await pool.post(server.url, "/x", b"2")
            assert await second.read() == b"2"
            assert server.connections == 2

    run(scenario())


def test_a_connection_idle_past_the_reuse_window_is_closed_by_the_pool():
    """A server that keeps idle connections open longer than the pool would reuse them (nginx: 75 s)
    does not hold the gateway's descriptors: the pool closes what it will never use again, and a
    request after that opens a new connection."""
    closed = asyncio.Event()

    async def handler(reader, writer):
        _, body = await read_request(reader)
        writer.write(json_response(body))
        await writer.drain()
        try:
            await read_request(reader)
        except asyncio.IncompleteReadError:
            closed.set()  # the pool hung up on an idle connection

    async def scenario():
        async with Server(handler) as server:
            pool = Pool(connect_timeout_s=1, idle_timeout_s=5, reuse_idle_s=0.2)
            response = await pool.post(server.url, "/x", b"1")
            assert await response.read() == b"1"
            response.release()
            await asyncio.wait_for(closed.wait(), timeout=10)
            assert not any(pool._idle.values())
            again = await pool.post(server.url, "/x", b"2")
            assert await again.read() == b"2" and server.connections == 2
            again.release()
            pool.close()

    run(scenario())
