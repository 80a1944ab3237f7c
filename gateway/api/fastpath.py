"""The proxy endpoints as raw ASGI in front of the FastAPI app.

POST /v1/chat/completions and /v1/completions carry all the traffic; routing them through
FastAPI/Starlette (request objects, middleware stack, a task group per streaming response) cost
about a third of the gateway's CPU per request. Every other route (models, health, metrics, admin,
the OpenAPI document) stays in FastAPI, which also owns the lifespan.
"""

from __future__ import annotations

import logging
import math

from fastapi import FastAPI

from gateway.api.completions import CHAT, COMPLETIONS, Endpoint, Receive, Reply, RequestIds, Scope, Send, proxy_completion
from gateway.api.errors import error_body
from gateway.errors import RequestError

log = logging.getLogger(__name__)

ENDPOINTS: dict[str, Endpoint] = {CHAT.path: CHAT, COMPLETIONS.path: COMPLETIONS}


class FastPath:
    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.request_ids = RequestIds()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = ENDPOINTS.get(scope.get("path", "")) if scope["type"] == "http" else None
        if endpoint is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        # Whether the response started (an error can then no longer become an error response):
        # set by proxy_completion, rather than by wrapping ``send``, which would add a coroutine
        # call to every piece of a stream.
        reply = Reply(self.request_ids)
        try:
            await proxy_completion(self.app.state.gateway, endpoint, scope, receive, send, reply)
        except RequestError as exc:
            if not reply.started:
                await _send_error(send, exc.status, error_body(exc.message, exc.error_type, exc.param, exc.code),
                                  exc.retry_after_s)
        except Exception:
            log.exception("unexpected error on %s", scope.get("path"))
            if not reply.started:
                body = error_body("The gateway failed to handle this request.", "internal_error", None, "internal_error")
                await _send_error(send, 500, body, None)


async def _send_error(send: Send, status: int, body: bytes, retry_after_s: float | None) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after_s is not None:
        headers.append((b"retry-after", str(max(1, math.ceil(retry_after_s))).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
