"""CoalescingCycle against uvicorn's own cycle: the same bytes reach the client, in fewer writes.

The transport is a recorder (a real socket cannot tell how many writes made up what it
received, and the number of writes is the point of the class)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from gateway.api.cycle import CoalescingCycle


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _cycle(kind: type[RequestResponseCycle], method: str = "POST", keep_alive: bool = True):
    transport = RecordingTransport()
    completed: list[bool] = []
    cycle = kind(
        scope={"type": "http", "method": method, "http_version": "1.1", "path": "/", "query_string": b"",
               "client": ("127.0.0.1", 1), "headers": []},
        transport=transport, flow=FlowControl(transport), logger=logging.getLogger("test"),
        access_logger=logging.getLogger("test.access"), access_log=False,
        default_headers=[(b"server", b"duet")], message_event=asyncio.Event(), expect_100_continue=False,
        keep_alive=keep_alive, on_response=lambda: completed.append(True),
    )
    return cycle, transport, completed


async def _play(kind, messages, **kwargs):
    cycle, transport, completed = _cycle(kind, **kwargs)
    for message in messages:
        await cycle.send(message)
    return transport, completed, cycle


JSON = [
    {"type": "http.response.start", "status": 200,
     "headers": [(b"content-type", b"application/json"), (b"content-length", b"11"), (b"X-Duet-Variant", b"fast")]},
    {"type": "http.response.body", "body": b'{"ok":true}'},
]
STREAM = [
    {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]},
    {"type": "http.response.body", "body": b"data: a\n\n", "more_body": True},
    {"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False},
]
STREAM_EMPTY_END = [*STREAM[:2], {"type": "http.response.body", "body": b"", "more_body": False}]


@pytest.mark.parametrize(("messages", "kwargs", "writes", "uvicorn_writes"), [
    (JSON, {}, 1, 2),
    (JSON, {"keep_alive": False}, 1, 2),
    (STREAM, {}, 2, 3),
    (STREAM_EMPTY_END, {}, 2, 3),
    (JSON, {"method": "HEAD"}, 1, 1),
])
def test_same_bytes_fewer_writes(messages, kwargs, writes, uvicorn_writes):
    async def scenario():
        theirs, their_done, _ = await _play(RequestResponseCycle, messages, **kwargs)
        ours, our_done, cycle = await _play(CoalescingCycle, messages, **kwargs)
        assert b"".join(ours.writes) == b"".join(theirs.writes)
        assert (len(ours.writes), len(theirs.writes)) == (writes, uvicorn_writes)
        assert our_done == their_done == [True] and cycle.response_complete
        assert ours.closed == theirs.closed

    asyncio.run(scenario())


@pytest.mark.parametrize("header", [(b"x-bad name", b"v"), (b"x-ok", b"line\r\nbreak")])
def test_header_that_could_split_the_response_is_refused(header):
    async def scenario():
        cycle, transport, _ = _cycle(CoalescingCycle)
        with pytest.raises(RuntimeError, match="Invalid HTTP header"):
            await cycle.send({"type": "http.response.start", "status": 200, "headers": [header]})
        assert transport.writes == []

    asyncio.run(scenario())


def test_body_longer_than_content_length_is_refused():
    async def scenario():
        cycle, _, _ = _cycle(CoalescingCycle)
        await cycle.send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        with pytest.raises(RuntimeError, match="longer than Content-Length"):
            await cycle.send({"type": "http.response.body", "body": b"abc"})

    asyncio.run(scenario())
