"""The HTTP app: routes, error mapping, and the lifespan that builds the running Gateway."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from gateway.api import errors
from gateway.api.admin import mount_admin
from gateway.api.explain import explain_plan
from gateway.api.fastpath import FastPath
from gateway.api.gate import ROUTES, Gate, key_of
from gateway.domain import Health
from gateway.endpoints import ENDPOINTS, Body, ChatBody, parse_any_body
from gateway.errors import RequestError
from gateway.flow import Inbound
from gateway.runtime import Gateway

JSON = "application/json"


def _json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type=JSON)


def _openapi_body(schema: type[Body]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {JSON: {"schema": schema.model_json_schema()}}}}


def create_app(build: Callable[[], Gateway]) -> Gate:
    """The gateway's ASGI app: the gate (keys and body limits, ``gateway.api.gate``) in front of
    the raw-ASGI proxy endpoints in front of the FastAPI app. ``build`` makes the Gateway when
    the app starts (inside the server's event loop)."""
    app = create_fastapi(build)
    return Gate(FastPath(app), ROUTES.covering(served_routes(app)), lambda: app.state.gateway)


def served_routes(app: FastAPI) -> set[tuple[str, str]]:
    """Every (method, path) the gateway serves: the fast path's and FastAPI's (HEAD aside, which
    Starlette adds to GET routes and the gate treats as GET)."""
    served = {("POST", path) for path in ENDPOINTS}
    for route in app.routes:
        methods = getattr(route, "methods", None) or ()
        served |= {(method, getattr(route, "path", "")) for method in methods if method != "HEAD"}
    return served


def create_fastapi(build: Callable[[], Gateway]) -> FastAPI:
    """Every route but the proxy endpoints, plus the lifespan and the OpenAPI document."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        gateway = build()
        await gateway.start()
        app.state.gateway = gateway
        try:
            yield
        finally:
            await gateway.stop()

    app = FastAPI(title="Duet", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.add_exception_handler(RequestError, errors.handle_request_error)
    app.add_exception_handler(HTTPException, errors.handle_http_exception)
    app.add_exception_handler(Exception, errors.handle_unexpected)

    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    mount_admin(app)

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        return _json(list_models(request.app.state.gateway))

    @app.post("/v1/duet/route", openapi_extra=_openapi_body(ChatBody))
    async def dry_run(request: Request) -> Response:
        """Route without forwarding: the decision with every plugin's verdict and score, planned
        as the proxy would plan it for the same key (the replicas its tier may use)."""
        gateway: Gateway = request.app.state.gateway
        _, body = parse_any_body(await request.body())  # bounded by the gate
        headers = dict(request.headers)
        grant = await gateway.access.authorize(key_of(request.scope), body.model)
        try:
            grant.cap_priority(headers)
            exchange = gateway.director.open(Inbound(body, headers), "dry-run", grant=grant, explain=True)
        finally:
            gateway.access.release(grant)
        return _json(explain_plan(exchange.plan))

    @app.get("/health")
    async def health() -> Response:
        return _json({"status": "ok"})

    @app.get("/ready")
    async def ready(request: Request) -> Response:
        report = readiness(request.app.state.gateway)
        return _json(report, 200 if report["ready"] else 503)

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        gateway: Gateway = request.app.state.gateway
        await gateway.fleet.refresh()  # the desired-replicas gauges, read at the scrape (gateway.autoscaling.gauge)
        return Response(gateway.telemetry.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document plus the endpoints the fast path serves outside FastAPI's router."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
        for path, endpoint in ENDPOINTS.items():
            schema["paths"][path] = {"post": {
                "summary": endpoint.summary,
                "operationId": path.strip("/").replace("/", "_"),
                **_openapi_body(endpoint.schema),
                "responses": {
                    "200": {"description": "The replica's answer (JSON, or text/event-stream when stream is true)"},
                    "400": {"description": "Invalid request (OpenAI error body)"},
                    "404": {"description": "Unknown model"},
                    "413": {"description": "Body too large"},
                    "429": {"description": "Overloaded (Retry-After)"},
                    "502": {"description": "Upstream failure"},
                    "503": {"description": "No healthy replica (Retry-After)"},
                    "504": {"description": "Deadline exceeded"},
                },
            }}
        app.openapi_schema = schema
    return app.openapi_schema


def list_models(gateway: Gateway) -> dict[str, Any]:
    """Each logical model and its pinned forms, vLLM-style, with the context they can take."""
    created = int(time.time())
    data = []
    for model in gateway.current.config.models.values():
        longest = max(v.max_model_len for v in model.variants.values())
        data.append(_model_card(model.name, model.name, created, longest))
        for pinned, variant in model.pins.items():
            data.append(_model_card(pinned, model.name, created, model.variants[variant].max_model_len))
    return {"object": "list", "data": data}


def _model_card(model_id: str, root: str, created: int, max_model_len: int) -> dict[str, Any]:
    return {
        "id": model_id, "object": "model", "created": created, "owned_by": "duet",
        "root": root, "parent": None if model_id == root else root, "max_model_len": max_model_len,
    }


def readiness(gateway: Gateway) -> dict[str, Any]:
    snapshot = gateway.store.snapshot()
    models = {}
    for model in gateway.current.config.models.values():
        healthy = [r.id for r in model.replicas if (s := snapshot.get(r.id)) is not None and s.health is Health.UP and s.routable]
        models[model.name] = {"healthy_replicas": healthy, "ready": bool(healthy)}
    report: dict[str, Any] = {"ready": all(m["ready"] for m in models.values()), "models": models}
    if (store := gateway.store_status()) is not None:
        # Never reached since start: not ready (a wrong redis_url, or Redis down at a rollout). Lost
        # after it answered: still ready, degraded to local state (docs/shared-state.md says why).
        report["store"] = {"kind": "redis", "ready": store.reached, "shared": store.up, "reason": store.problem}
        report["ready"] = report["ready"] and store.reached
    return report
