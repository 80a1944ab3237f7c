"""The few ASGI primitives the simulator's HTTP surface needs (no framework: one core must
carry thousands of concurrent streams)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON = b"application/json"
SSE = b"text/event-stream; charset=utf-8"


class SimulatedCrash(Exception):
    """Raised mid-response to make the server cut the connection, as a dying replica does."""


def request_headers(scope: Scope) -> dict[str, str]:
    """Request headers as a dict of lower-case names (the last value wins)."""
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


async def read_body(receive: Receive) -> bytes:
    """The whole request body."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def respond(send: Send, status: int, body: bytes, content_type: bytes = JSON,
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Send a complete response."""
    head = [(b"content-length", str(len(body)).encode()), (b"content-type", content_type), (b"vary", b"Origin")]
    await send({"type": "http.response.start", "status": status, "headers": head + (headers or [])})
    await send({"type": "http.response.body", "body": body})


async def start_stream(send: Send) -> None:
    """Begin a server-sent-events response."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", SSE), (b"vary", b"Origin")]})


async def stream_chunk(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def end_stream(send: Send) -> None:
    await send({"type": "http.response.body", "body": b""})


async def wait_disconnect(receive: Receive) -> None:
    """Return when the client disconnects (after the body has been read)."""
    while (await receive())["type"] != "http.disconnect":
        pass
