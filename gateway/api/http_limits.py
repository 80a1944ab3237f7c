"""The gateway's HTTP server protocol: uvicorn's httptools protocol with a bound on the request
line and headers, which it does not have, and responses written by ``CoalescingCycle``
(``gateway.api.cycle``: the head goes out with the first body piece, one write instead of two).

uvicorn appends every header it parses to a list until the blank line arrives, so a client that
streams headers without end grows the gateway's memory without end (its h11 protocol has a limit,
httptools none). This protocol counts the bytes of the URL and headers of each request and
answers ``431 Request Header Fields Too Large`` (OpenAI error body, connection closed) once they
pass ``max_header_bytes``.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from gateway.api.cycle import CoalescingCycle
from gateway.errors import error_body


class HeadersTooLarge(Exception):
    """Raised inside the parser's callback; httptools turns it into a parser error."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a per-request limit on header bytes (set by ``with_header_limit``)."""

    max_header_bytes = 32 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_bytes = 0
        self._headers_too_large = False

    def on_message_begin(self) -> None:
        self._header_bytes = 0
        super().on_message_begin()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        # uvicorn builds its cycle class by name in on_headers_complete; turning it into the
        # coalescing subclass here (it adds no state) saves copying that 50-line method.
        cycle.__class__ = CoalescingCycle
        super()._start_asgi_task(cycle, app)

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)  # ": " and CRLF, as on the wire
        super().on_header(name, value)

    def _count(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > self.max_header_bytes:
            self._headers_too_large = True
            raise HeadersTooLarge

    def send_400_response(self, msg: str) -> None:
        """uvicorn answers any parser error with a 400; headers over that limit are a 431."""
        if not self._headers_too_large:
            super().send_400_response(msg)
            return
        body = error_body(f"The request line and headers are larger than the limit of {self.max_header_bytes} bytes.",
                          "invalid_request_error", None, "request_header_fields_too_large")
        head = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n")
        self.transport.write(head + body)
        self.transport.close()


def with_header_limit(max_header_bytes: int) -> type[LimitedHttpToolsProtocol]:
    """The protocol class for uvicorn's ``http=`` setting, bounded at ``max_header_bytes``."""
    return type("HeaderLimitedHttpToolsProtocol", (LimitedHttpToolsProtocol,), {"max_header_bytes": max_header_bytes})
