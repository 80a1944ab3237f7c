"""The registry of proxied APIs (``gateway.endpoints.ENDPOINTS``) is the one list the HTTP layer
serves: the fast path takes exactly its paths, the gate routes each of them and no other proxied
path, the OpenAPI document lists each, and FastAPI serves none of them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.api.app import _openapi, create_fastapi, served_routes
from gateway.api.asgi import Message
from gateway.api.fastpath import FastPath
from gateway.api.gate import ROUTES, Guard
from gateway.endpoints import ENDPOINTS

# The one large-body POST route that is not a proxied API: the dry run, which FastAPI serves.
DRY_RUN = "/v1/duet/route"


class Behind:
    """The app behind the fast path: records the paths it was handed."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.state = SimpleNamespace(gateway=None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.paths.append(scope["path"])


def post(app: Any, path: str) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": []}
    asyncio.run(app(scope, receive, send))
    return sent


def test_the_gate_routes_every_registered_endpoint_and_no_other_proxied_path():
    proxied = {r.path for r in ROUTES.routes if r.method == "POST" and r.large_body} - {DRY_RUN}
    assert proxied == set(ENDPOINTS)
    assert all(ROUTES.find("POST", path).guard is Guard.KEY for path in ENDPOINTS)


@pytest.mark.parametrize("path", [*ENDPOINTS, DRY_RUN, "/v1/models"])
def test_the_fast_path_takes_exactly_the_registered_endpoints(path: str):
    behind = Behind()
    sent = post(FastPath(behind), path)  # type: ignore[arg-type]
    if path in ENDPOINTS:  # parsed as the endpoint says: "{}" names no model
        assert behind.paths == [] and sent[0]["status"] == 400
    else:
        assert behind.paths == [path] and sent == []


def test_fastapi_serves_none_of_the_registered_endpoints_and_documents_each():
    app = create_fastapi(lambda: None)  # type: ignore[arg-type,return-value]  # never started
    fastapi_routes = {(m, getattr(r, "path", "")) for r in app.routes for m in getattr(r, "methods", None) or ()}
    assert not {("POST", path) for path in ENDPOINTS} & fastapi_routes
    assert {("POST", path) for path in ENDPOINTS} <= served_routes(app)
    ROUTES.covering(served_routes(app))  # what create_app checks: the table names every served route
    document = _openapi(app)["paths"]
    assert all(document[path]["post"]["summary"] == e.summary for path, e in ENDPOINTS.items())
