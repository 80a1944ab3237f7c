"""The one place where Duet's errors become OpenAI-shaped HTTP responses."""

from __future__ import annotations

import logging
import math

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from gateway.api.asgi import Send
from gateway.errors import RequestError, error_body

log = logging.getLogger(__name__)

_HTTP_TYPES = {404: "not_found_error", 405: "invalid_request_error", 413: "invalid_request_error"}


def error_response(exc: RequestError, headers: dict[str, str] | None = None) -> Response:
    headers = {**(headers or {}), **dict(exc.headers)}
    if exc.retry_after_s is not None:
        headers["retry-after"] = str(max(1, math.ceil(exc.retry_after_s)))
    body = error_body(exc.message, exc.error_type, exc.param, exc.code)
    return Response(body, status_code=exc.status, media_type="application/json", headers=headers)


async def send_error(send: Send, status: int, body: bytes,
                     retry_after_s: float | None, extra: tuple[tuple[str, str], ...] = ()) -> None:
    """An error answer written as raw ASGI (the gate and the fast path, outside FastAPI)."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after_s is not None:
        headers.append((b"retry-after", str(max(1, math.ceil(retry_after_s))).encode()))
    headers += [(name.encode("latin-1"), value.encode("latin-1")) for name, value in extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_request_error(send: Send, exc: RequestError) -> None:
    await send_error(send, exc.status, error_body(exc.message, exc.error_type, exc.param, exc.code), exc.retry_after_s,
                     exc.headers)


async def handle_request_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestError)
    return error_response(exc)


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error_type = _HTTP_TYPES.get(exc.status_code, "invalid_request_error")
    body = error_body(str(exc.detail), error_type, None, exc.status_code)
    return Response(body, status_code=exc.status_code, media_type="application/json", headers=exc.headers)


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    body = error_body("The gateway failed to handle this request.", "internal_error", None, "internal_error")
    return Response(body, status_code=500, media_type="application/json")
