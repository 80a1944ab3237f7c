"""The stream relay against a real replica-shaped server on loopback that writes its SSE events
in awkward pieces (an event, and the model name inside it, split across writes)."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from gateway.domain import Replica
from gateway.endpoints.messages import MESSAGES_API
from gateway.endpoints.responses import RESPONSES_API
from gateway.outcome import Outcome
from gateway.proxy.forward import Answer, UpstreamCall, UpstreamRequest
from gateway.proxy.framing import OPENAI, Framing
from gateway.proxy.http1 import Pool
from gateway.proxy.relay import StreamOptions, relay_stream
from gateway.proxy.sse import DONE, ModelRewrite
from tests.gateway.proxy.test_http1 import Server, read_request

MESSAGES, RESPONSES = MESSAGES_API.framing, RESPONSES_API.framing

REPLICA = Replica("r1", "smollm2", "fast", "")


def _event(payload: dict) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _chunk(content: str) -> bytes:
    return _event({"id": "x", "model": "smollm2-fast", "choices": [{"index": 0, "delta": {"content": content}}]})


USAGE = _event({"id": "x", "model": "smollm2-fast", "choices": [],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})


def _stream_writes(done: bool) -> list[bytes]:
    """The SSE bytes as the replica writes them: split mid-event and mid-model-name."""
    first, second, third = _chunk("a"), _chunk("b"), _chunk("c")
    cut = second.index(b"smollm2-fast") + 4
    writes = [first + second[:cut], second[cut:] + third[:10], third[10:], USAGE]
    return writes + [DONE] if done else writes


def _chunked(writes: list[bytes], end: bool) -> list[bytes]:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    body = [b"%x\r\n%b\r\n" % (len(w), w) for w in writes]
    return [head, *body, b"0\r\n\r\n"] if end else [head, *body]


async def _relay(writes: list[bytes], strip_usage: bool,
                 framing: Framing = OPENAI) -> tuple[list[tuple[bytes, bool]], list[Outcome]]:
    async def handler(reader, writer):
        await read_request(reader)
        for piece in writes:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.01)  # separate reads on the gateway's side

    async with Server(handler) as server:
        pool = Pool(connect_timeout_s=1, idle_timeout_s=5)
        replica = Replica(REPLICA.id, REPLICA.model, REPLICA.variant, server.url)
        answer = await UpstreamCall(pool, UpstreamRequest("/v1/chat/completions", lambda _: b"{}", b"", True)).attempt(replica)
        assert isinstance(answer, Answer)
        outcomes: list[Outcome] = []

        async def on_done(outcome: Outcome) -> None:
            outcomes.append(outcome)

        options = StreamOptions(ModelRewrite.between("smollm2-fast", "smollm2"), strip_usage, 5, framing)
        pieces: list[tuple[bytes, bool]] = []

        async def write(piece: bytes, last: bool) -> None:
            pieces.append((piece, last))

        await relay_stream(answer, options, write, on_done)
        pool.close()
        return pieces, outcomes


def _events(pieces: list[tuple[bytes, bool]]) -> list[bytes]:
    return [e + b"\n\n" for e in b"".join(p for p, _ in pieces).split(b"\n\n")[:-1]]


@pytest.mark.parametrize("strip_usage", [True, False])
def test_stream_is_relayed_whole_events_rewritten_and_counted(strip_usage):
    pieces, outcomes = asyncio.run(_relay(_chunked(_stream_writes(done=True), end=True), strip_usage))
    events = _events(pieces)
    contents = [orjson.loads(e[6:])["choices"][0]["delta"]["content"] for e in events[:3]]
    assert contents == ["a", "b", "c"]
    assert all(orjson.loads(e[6:])["model"] == "smollm2" for e in events[:-1])
    assert events[-1] == DONE and (USAGE.replace(b"smollm2-fast", b"smollm2") in events) is not strip_usage
    assert [last for _, last in pieces] == [False] * (len(pieces) - 1) + [True]
    assert all(not p.endswith(b"data: ") for p, _ in pieces)  # no piece ends inside an event
    [outcome] = outcomes
    assert (outcome.ok, outcome.status, outcome.input_tokens, outcome.output_tokens) == (True, 200, 7, 3)
    assert outcome.ttft_s is not None


def test_replica_closing_without_done_ends_the_client_stream_with_an_error():
    pieces, outcomes = asyncio.run(_relay(_chunked(_stream_writes(done=False), end=False), strip_usage=True))
    last, is_last = pieces[-1]
    assert is_last and last.endswith(DONE) and b'"error"' in last
    [outcome] = outcomes
    assert (outcome.ok, outcome.status) == (False, 502)


@pytest.mark.parametrize("strip_usage", [True, False])
def test_stream_arriving_in_one_read_is_one_piece(strip_usage):
    pieces, outcomes = asyncio.run(_relay(_chunked([b"".join(_stream_writes(done=True))], end=True), strip_usage))
    [(piece, last)] = pieces
    events = _events(pieces)
    assert last and events[-1] == DONE and len(events) == (4 if strip_usage else 5)
    assert b"smollm2-fast" not in piece
    assert (outcomes[0].status, outcomes[0].input_tokens, outcomes[0].output_tokens) == (200, 7, 3)


def _named(name: str, payload: dict) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


MESSAGES_STREAM = [
    _named("message_start", {"type": "message_start", "message": {"id": "m", "model": "smollm2-fast",
                                                                   "usage": {"input_tokens": 7, "output_tokens": 0}}}),
    _named("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}}),
    _named("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                             "usage": {"input_tokens": 7, "output_tokens": 3}}),
]
RESPONSES_STREAM = [
    _named("response.created", {"type": "response.created", "response": {"model": "smollm2-fast", "usage": None}}),
    _named("response.output_text.delta", {"type": "response.output_text.delta", "delta": "a"}),
]


@pytest.mark.parametrize(("framing", "events", "last"), [
    (MESSAGES, MESSAGES_STREAM, _named("message_stop", {"type": "message_stop"})),
    (RESPONSES, RESPONSES_STREAM, _named("response.completed", {"type": "response.completed", "response": {
        "model": "smollm2-fast", "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}}})),
])
def test_named_event_streams_end_on_their_last_event_and_are_counted(framing, events, last):
    pieces, outcomes = asyncio.run(_relay(_chunked([*events, last], end=True), strip_usage=False, framing=framing))
    assert pieces[-1][1] and b"".join(p for p, _ in pieces) == b"".join([*events, last]).replace(b"smollm2-fast", b"smollm2")
    [outcome] = outcomes
    assert (outcome.ok, outcome.status, outcome.input_tokens, outcome.output_tokens) == (True, 200, 7, 3)


@pytest.mark.parametrize(("framing", "events"), [(MESSAGES, MESSAGES_STREAM), (RESPONSES, RESPONSES_STREAM)])
def test_named_event_stream_cut_short_ends_with_the_apis_error_event(framing, events):
    pieces, outcomes = asyncio.run(_relay(_chunked(events, end=False), strip_usage=False, framing=framing))
    last, is_last = pieces[-1]
    assert is_last and last.startswith(b"event: error\ndata: ") and DONE not in last
    assert (outcomes[0].ok, outcomes[0].status) == (False, 502)
