"""The proxy endpoints as raw ASGI in front of the FastAPI app.

POST /v1/chat/completions and /v1/completions carry most of the traffic (every proxied API
``gateway.endpoints.ENDPOINTS`` registers takes the same path); routing them through
FastAPI/Starlette (request objects, middleware stack, a task group per streaming response) cost
about a third of the gateway's CPU per request. Every other route (models, health, metrics, admin,
the OpenAPI document) stays in FastAPI, which also owns the lifespan.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI

from gateway.api.asgi import Receive, Scope, Send
from gateway.api.errors import send_error, send_request_error
from gateway.api.serving import Reply, RequestIds, serve
from gateway.endpoints import ENDPOINTS
from gateway.errors import RequestError, error_body

log = logging.getLogger(__name__)

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
        # set by ``serve``, rather than by wrapping ``send``, which would add a coroutine
        # call to every piece of a stream.
        reply = Reply(self.request_ids, endpoint)
        try:
            await serve(self.app.state.gateway, scope, receive, send, reply)
        except RequestError as exc:
            if not reply.started:
                await send_request_error(send, exc)
        except Exception:
            log.exception("unexpected error on %s", scope.get("path"))
            if not reply.started:
                body = error_body("The gateway failed to handle this request.", "internal_error", None, "internal_error")
                await send_error(send, 500, body, None)

