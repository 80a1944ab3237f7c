"""gateway.epp.rpc and its transport (h2.py) against grpcio's own client, on loopback: health
checks, a bidirectional stream, messages larger than HTTP/2's default flow-control windows,
errors as statuses, and a client's cancel reaching the handler."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import grpc
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway.epp.hpack_blocks import literal, trailers
from gateway.epp.rpc import Call, HealthService, RpcServer
from gateway.epp.wire import PROCESS_PATH

SERVING = health_pb2.HealthCheckResponse.SERVING


def _served(handler: Callable[[Call], Awaitable[None]],
            client: Callable[[grpc.aio.Channel], Awaitable[None]], health: HealthService | None = None) -> None:
    async def main() -> None:
        server = RpcServer({PROCESS_PATH: (handler, ext_proc.ProcessingRequest)}, health)
        port = await server.start("127.0.0.1", 0)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                await asyncio.wait_for(client(channel), timeout=10)
        finally:
            await server.stop(1.0)

    asyncio.run(main())


async def _echo(call: Call) -> None:
    """Each request body back as a response body, in order, until the client ends its side."""
    while (message := await call.read()) is not None:
        body = ext_proc.BodyResponse(response=ext_proc.CommonResponse(
            body_mutation=ext_proc.BodyMutation(body=message.request_body.body)))
        await call.write(ext_proc.ProcessingResponse(request_body=body))


def _body(data: bytes) -> ext_proc.ProcessingRequest:
    return ext_proc.ProcessingRequest(request_body=ext_proc.HttpBody(body=data))


def test_health_answers_each_service_it_knows_and_not_found_for_others() -> None:
    health = HealthService()
    health.set("readiness", SERVING)

    async def client(channel: grpc.aio.Channel) -> None:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(service="readiness"))
        assert reply.status == SERVING
        try:
            await stub.Check(health_pb2.HealthCheckRequest(service="nope"))
            raise AssertionError("an unknown service answered")
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.NOT_FOUND
        health.shut_down()
        reply = await stub.Check(health_pb2.HealthCheckRequest(service="readiness"))
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING

    _served(_echo, client, health)


def test_a_stream_carries_messages_both_ways_in_order_including_ones_past_the_windows() -> None:
    # 3 MiB: past HTTP/2's default 64 KiB stream and connection windows and its 16 KiB frames.
    sizes = [0, 5, 70_000, 3 * 1024 * 1024, 17]

    async def client(channel: grpc.aio.Channel) -> None:
        stub = ext_proc_grpc.ExternalProcessorStub(channel)
        sent = [bytes([i % 251]) * size for i, size in enumerate(sizes)]
        call = stub.Process(iter([_body(data) for data in sent]))
        got = [response.request_body.response.body_mutation.body async for response in call]
        assert got == sent
        assert await call.code() == grpc.StatusCode.OK

    _served(_echo, client)


def test_a_failing_handler_ends_its_call_with_an_error_status_and_others_go_on() -> None:
    async def failing(call: Call) -> None:
        message = await call.read()
        if message is not None and message.request_body.body == b"fail":
            raise RuntimeError("boom")
        await _echo(call)

    async def client(channel: grpc.aio.Channel) -> None:
        stub = ext_proc_grpc.ExternalProcessorStub(channel)
        call = stub.Process(iter([_body(b"fail")]))
        try:
            [r async for r in call]
            raise AssertionError("the failing call ended OK")
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.UNKNOWN
            assert "boom" in (error.details() or "")
        ok = stub.Process(iter([_body(b"first"), _body(b"x")]))
        assert [r.request_body.response.body_mutation.body async for r in ok] == [b"x"]

    _served(failing, client)


def test_an_unknown_method_is_unimplemented() -> None:
    async def client(channel: grpc.aio.Channel) -> None:
        unknown = channel.unary_unary("/no.Such/Method", request_serializer=lambda b: b, response_deserializer=lambda b: b)
        try:
            await unknown(b"")
            raise AssertionError("an unknown method answered")
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.UNIMPLEMENTED

    _served(_echo, client)


def test_a_client_cancelling_its_call_cancels_the_handler() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def waiting(call: Call) -> None:
        await call.read()
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def client(channel: grpc.aio.Channel) -> None:
        stub = ext_proc_grpc.ExternalProcessorStub(channel)
        call = stub.Process()
        await call.write(_body(b"hello"))
        await started.wait()
        call.cancel()
        await asyncio.wait_for(cancelled.wait(), timeout=5)

    _served(waiting, client)


def test_headers_are_encoded_without_touching_the_decoders_table() -> None:
    from hpack import Decoder

    decoder = Decoder()

    def decoded(block: bytes) -> list[tuple[str, str]]:
        return [(str(name), str(value)) for name, value in decoder.decode(block)]

    assert decoded(literal(b"grpc-status", b"0")) == [("grpc-status", "0")]
    assert not decoder.header_table.dynamic_entries
    assert decoded(trailers(13, "50% bad\n")) == [("grpc-status", "13"), ("grpc-message", "50%25 bad%0A")]
    long = "x" * 300  # lengths past the 7-bit prefix take continuation bytes
    assert decoded(literal(b"grpc-message", long.encode())) == [("grpc-message", long)]
    assert len(trailers(2, "\u20ac" * 20_000)) < 16_384  # a long message is cut to fit one frame


def test_a_remembered_header_block_is_forgotten_once_the_table_changes() -> None:
    from hpack import Encoder

    from gateway.epp.h2 import Connection

    async def main() -> None:
        connection = Connection(lambda stream: None, lambda connection: None)
        encoder = Encoder()
        assert connection._decoded(encoder.encode([("a", "1")])) == {"a": "1"}  # enters the table
        indexed = encoder.encode([("a", "1")])
        assert len(indexed) == 1 and connection._decoded(indexed) == {"a": "1"}
        assert connection._decoded(indexed) == {"a": "1"}  # remembered
        assert connection._decoded(encoder.encode([("b", "2")])) == {"b": "2"}  # now first in the table
        again = encoder.encode([("b", "2")])
        assert again == indexed  # the same byte now means b: 2
        assert connection._decoded(again) == {"b": "2"}

    asyncio.run(main())


def test_which_header_blocks_change_the_decoders_table() -> None:
    from hpack import Encoder

    from gateway.epp.hpack_blocks import changes_table

    encoder = Encoder()
    assert changes_table(encoder.encode([("a", "1")]))  # a literal with incremental indexing
    assert not changes_table(encoder.encode([("a", "1"), (":method", "POST")]))  # indexed only
    assert changes_table(encoder.encode([("b", "x" * 200)], huffman=False))  # a long one, indexed too
    not_indexed = literal(b"grpc-status", b"0") + literal(b"x" * 130, b"y" * 300)  # multi-byte lengths
    assert not changes_table(not_indexed)
    envoys = bytes.fromhex("8304a560b5773fa5d05b3b98855cbe5315761c8bf7657c1e525b2a1d1aec390a841ec635d8721508c286c1c0bfbe")
    assert not changes_table(envoys)  # :path as a literal without indexing, the rest indexed
    assert changes_table(b"\x3f\xe1\x1f")  # a table size update
    assert changes_table(b"\x0f")  # cut short: malformed


def test_a_call_answered_ends_ok_at_once_and_its_handler_runs_on_uncancelled() -> None:
    release, finished = asyncio.Event(), asyncio.Event()

    async def answering(call: Call) -> None:
        await call.read()
        await call.write(ext_proc.ProcessingResponse())
        call.answered()
        await release.wait()  # the bookkeeping after the answer
        finished.set()

    async def client(channel: grpc.aio.Channel) -> None:
        stub = ext_proc_grpc.ExternalProcessorStub(channel)
        call = stub.Process()
        await call.write(_body(b"x"))
        await call.read()
        assert await call.code() == grpc.StatusCode.OK  # while the handler still waits
        call.cancel()
        await asyncio.sleep(0.1)
        release.set()
        await asyncio.wait_for(finished.wait(), timeout=5)

    _served(answering, client)
