"""uvicorn's request/response cycle, writing each response with as few socket writes as it can.

uvicorn writes the status line and headers the moment ``http.response.start`` is sent, then one
write per body message: a non-stream answer costs two ``write`` syscalls (and the client two TCP
segments), a stream one more for its terminating empty message. On loopback a write is several
microseconds of kernel time, a visible part of the gateway's per-request cost. This cycle holds
the head back until the first body message and writes both at once, and a stream's last piece
carries its chunked terminator in the same write. What reaches the client is byte for byte what
uvicorn would write; only the number of writes changes.

Headers are validated like uvicorn does (a name or value that could split the response is an
error), but with one regex search over all names and one over all values instead of two per
header: the character classes match any byte of any header, so searching the concatenation
finds exactly what the searches one by one would.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HEADER_RE, HEADER_VALUE_RE, STATUS_LINE, RequestResponseCycle
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string


class CoalescingCycle(RequestResponseCycle):
    """A ``RequestResponseCycle`` whose response head goes out with the first body message."""

    _pending_head: bytes = b""

    async def send(self, message: Any) -> None:
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        if self.disconnected:
            return
        if not self.response_started:
            if message["type"] != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', but got '{message['type']}'.")
            self._start(message)
        elif not self.response_complete:
            if message["type"] != "http.response.body":
                raise RuntimeError(f"Expected ASGI message 'http.response.body', but got '{message['type']}'.")
            self._body(message.get("body", b""), message.get("more_body", False))
        else:
            raise RuntimeError(f"Unexpected ASGI message '{message['type']}' sent, after response already completed.")

    def _start(self, message: Any) -> None:
        self.response_started = True
        self.waiting_for_100_continue = False
        status = message["status"]
        headers = self.default_headers + list(message.get("headers", []))
        if self.access_log:
            self.access_logger.info('%s - "%s %s HTTP/%s" %d', get_client_addr(self.scope), self.scope["method"],
                                    get_path_with_query_string(self.scope), self.scope["http_version"], status)
        if HEADER_RE.search(b"".join(name for name, _ in headers)):
            raise RuntimeError("Invalid HTTP header name.")
        if HEADER_VALUE_RE.search(b"".join(value for _, value in headers)):
            raise RuntimeError("Invalid HTTP header value.")
        content = [STATUS_LINE[status]]
        has_connection_close = False
        for raw_name, value in headers:
            name = raw_name.lower()
            if name == b"content-length" and self.chunked_encoding is None:
                self.expected_content_length = int(value.decode())
                self.chunked_encoding = False
            elif name == b"transfer-encoding" and value.lower() == b"chunked":
                self.expected_content_length = 0
                self.chunked_encoding = True
            elif name == b"connection" and b"close" in [token.lower().strip() for token in value.split(b",")]:
                self.keep_alive = False
                has_connection_close = True
            content += (name, b": ", value, b"\r\n")
        if not self.keep_alive and not has_connection_close:
            content.append(b"connection: close\r\n")
        if self.chunked_encoding is None and self.scope["method"] != "HEAD" and status not in (204, 304):
            self.chunked_encoding = True
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        self._pending_head = b"".join(content)

    def _body(self, body: bytes, more_body: bool) -> None:
        head, self._pending_head = self._pending_head, b""
        if self.scope["method"] == "HEAD":
            self.expected_content_length = 0
            out = head
        elif self.chunked_encoding:
            out = head + b"%x\r\n%b\r\n" % (len(body), body) if body else head
            if not more_body:
                out += b"0\r\n\r\n"
        else:
            if len(body) > self.expected_content_length:
                raise RuntimeError("Response content longer than Content-Length")
            self.expected_content_length -= len(body)
            out = head + body if head else body
        if out:
            self.transport.write(out)
        if not more_body:
            if self.expected_content_length != 0:
                raise RuntimeError("Response content shorter than Content-Length")
            self.response_complete = True
            self.message_event.set()
            if not self.keep_alive:
                self.transport.close()
            self.on_response()
