"""Admin and usage routes, all behind the admin key (``Authorization: Bearer <admin key>``, the
key read from the environment variable ``access.admin_key_env``; unset, these routes answer 403):

    GET    /v1/duet/usage?month=YYYY-MM&key=ID   the usage and cost ledger
    GET    /admin/keys                           key records (never the keys)
    POST   /admin/keys {"name", "tier"}          a new key, shown in this answer only
    DELETE /admin/keys/{id}                      revoke
    POST   /admin/reload                         re-read the config file (policy, tiers)
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from typing import Any

import orjson
from fastapi import APIRouter, FastAPI
from pydantic import BaseModel, ConfigDict
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from gateway.access.guard import KeyedAccess
from gateway.access.keys import bearer, new_key
from gateway.access.ledger import month_of
from gateway.api.errors import error_body
from gateway.errors import AuthenticationFailed, InvalidRequest, PermissionDenied
from gateway.runtime import Gateway


class NewKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    tier: str


def _json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json")


def require_admin(request: Request) -> Gateway:
    """The gateway, once the request proved it holds the admin key (constant-time check)."""
    gateway: Gateway = request.app.state.gateway
    expected = os.environ.get(gateway.current.config.access.admin_key_env, "")
    if not expected:
        raise PermissionDenied(f"Admin routes are off: set {gateway.current.config.access.admin_key_env}.", code="admin_disabled")
    presented = bearer(request.headers) or ""
    if not hmac.compare_digest(hashlib.sha256(presented.encode()).digest(), hashlib.sha256(expected.encode()).digest()):
        raise AuthenticationFailed("This route needs the admin key.")
    return gateway


def keyed(gateway: Gateway) -> KeyedAccess:
    if not isinstance(gateway.access, KeyedAccess):
        raise InvalidRequest("API keys are off in this gateway's config (access.require_keys).", code="keys_off")
    return gateway.access


async def _unavailable(request: Request, exc: Exception) -> Response:
    body = error_body(f"The shared store cannot answer: {exc}", "service_unavailable", None, "store_unavailable")
    return Response(body, status_code=503, media_type="application/json", headers={"retry-after": "1"})


def mount_admin(app: FastAPI) -> None:
    """Add the admin routes to ``app``."""
    router = APIRouter()

    @router.get("/v1/duet/usage")
    async def usage(request: Request, month: str | None = None, key: str | None = None) -> Response:
        access = keyed(require_admin(request))
        month = month or month_of(time.time())
        rows = await access.quotas.usage(month, key)
        return _json({"object": "list", "month": month, "data": [row.to_json() for row in rows]})

    @router.get("/admin/keys")
    async def list_keys(request: Request) -> Response:
        access = keyed(require_admin(request))
        records = await access.keys.load()
        return _json({"object": "list", "data": [_public(k.to_json()) for k in records]})

    @router.post("/admin/keys")
    async def create_key(request: Request, spec: NewKey) -> Response:
        access = keyed(require_admin(request))
        if spec.tier not in access.settings.tiers:
            raise InvalidRequest(f"Unknown tier '{spec.tier}' (configured: {sorted(access.settings.tiers)}).", param="tier")
        secret, record = new_key(spec.name, spec.tier, time.time())
        await access.keys.add(record)
        await access.refresh_keys()
        return _json({**_public(record.to_json()), "key": secret}, 201)

    @router.delete("/admin/keys/{key_id}")
    async def revoke_key(request: Request, key_id: str) -> Response:
        access = keyed(require_admin(request))
        if not await access.keys.revoke(key_id):
            raise HTTPException(404, f"No key with id '{key_id}'.")
        await access.refresh_keys()
        return _json({"id": key_id, "revoked": True})

    @router.post("/admin/reload")
    async def reload(request: Request) -> Response:
        gateway = require_admin(request)
        return _json({"reloaded": await gateway.reload()})

    app.include_router(router)
    app.add_exception_handler(RedisError, _unavailable)


def _public(record: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in record.items() if k != "hash"}
