"""Admin and usage routes, all behind the admin key (``Authorization: Bearer <admin key>``, the
key read from the environment variable ``access.admin_key_env``; unset, these routes answer 403).
The gate (``gateway.api.gate``) checks the key before a route parses its body:

    GET    /v1/duet/usage?month=YYYY-MM&key=ID   the usage and cost ledger
    GET    /v1/duet/savings?month=&since=&key=&tenant=
                                                 the savings receipt per key and tenant, and the
                                                 online-parity verdicts (gateway.access.receipts.savings)
    GET    /admin/keys                           key records (never the keys)
    POST   /admin/keys {"name", "tier", "tenant"?, "tasks"?}
                                                 a new key, shown in this answer only
    DELETE /admin/keys/{id}                      revoke
    POST   /admin/reload                         re-read the config file (policy, tiers)
    GET    /admin/autoscaling                    why duet_desired_replicas says what it says
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from gateway.access.guard import KeyedAccess
from gateway.access.keys import new_key
from gateway.access.ledger import UsageRow, month_of
from gateway.access.receipts.savings import NO_TENANT, Verdict, by_key, by_tenant, months_between, total, verdicts
from gateway.errors import InvalidRequest, error_body
from gateway.runtime import Gateway

log = logging.getLogger(__name__)


class NewKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    tier: str
    tenant: str = ""
    # The task types the key's application sends (ApiKey.tasks); empty: any.
    tasks: list[str] = []


def _json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json")


def gateway_of(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


def keyed(gateway: Gateway) -> KeyedAccess:
    if not isinstance(gateway.access, KeyedAccess):
        raise InvalidRequest("API keys are off in this gateway's config (access.require_keys).", code="keys_off")
    return gateway.access


async def _unavailable(request: Request, exc: Exception) -> Response:
    log.warning("admin route %s: the shared store cannot answer (%s: %s)", request.url.path, type(exc).__name__, exc)
    body = error_body("The shared store cannot answer.", "service_unavailable", None, "store_unavailable")
    return Response(body, status_code=503, media_type="application/json", headers={"retry-after": "1"})


def mount_admin(app: FastAPI) -> None:
    """Add the admin routes to ``app`` (on the app itself, so ``app.routes`` lists them)."""

    @app.get("/v1/duet/usage")
    async def usage(request: Request, month: str | None = None, key: str | None = None) -> Response:
        access = keyed(gateway_of(request))
        month = month or month_of(time.time())
        rows = await access.quotas.usage(month, key)
        return _json({"object": "list", "month": month, "data": [row.to_json() for row in rows]})

    @app.get("/v1/duet/savings")
    async def savings(request: Request, month: str | None = None, since: str | None = None, key: str | None = None,
                      tenant: str | None = None) -> Response:
        gateway = gateway_of(request)
        access = keyed(gateway)
        month = month or month_of(time.time())
        months = months_between(since or month, month)
        rows: list[UsageRow] = []
        for each in months:
            rows.extend(await access.quotas.usage(each, key))
        tenants = {k.id: k.tenant for k in await access.keys.load()}
        keys = {kid: s for kid, s in by_key(rows).items() if tenant is None or (tenants.get(kid) or NO_TENANT) == tenant}
        return _json({
            "object": "savings", "months": months,
            "keys": [{"key_id": kid, "tenant": tenants.get(kid) or NO_TENANT, **s.to_json()} for kid, s in keys.items()],
            "tenants": [{"tenant": t, **s.to_json()} for t, s in by_tenant(keys, tenants).items()],
            "total": total(keys.values()).to_json(),
            "parity": [v.to_json() for v in await _verdicts(gateway, months)],
        })

    @app.get("/admin/keys")
    async def list_keys(request: Request) -> Response:
        access = keyed(gateway_of(request))
        records = await access.keys.load()
        return _json({"object": "list", "data": [_public(k.to_json()) for k in records]})

    @app.post("/admin/keys")
    async def create_key(request: Request, spec: NewKey) -> Response:
        access = keyed(gateway_of(request))
        if spec.tier not in access.settings.tiers:
            raise InvalidRequest(f"Unknown tier '{spec.tier}' (configured: {sorted(access.settings.tiers)}).", param="tier")
        known = gateway_of(request).current.config.policy.tasks
        if unknown := [t for t in spec.tasks if t not in known]:
            raise InvalidRequest(f"Unknown task type(s) {unknown} (configured: {sorted(known)}).", param="tasks")
        secret, record = new_key(spec.name, spec.tier, time.time(), spec.tenant, spec.tasks)
        await access.keys.add(record)
        await access.refresh_keys()
        return _json({**_public(record.to_json()), "key": secret}, 201)

    @app.delete("/admin/keys/{key_id}")
    async def revoke_key(request: Request, key_id: str) -> Response:
        access = keyed(gateway_of(request))
        if not await access.keys.revoke(key_id):
            raise HTTPException(404, f"No key with id '{key_id}'.")
        await access.refresh_keys()
        return _json({"id": key_id, "revoked": True})

    @app.post("/admin/reload")
    async def reload(request: Request) -> Response:
        gateway = gateway_of(request)
        return _json({"reloaded": await gateway.reload()})

    @app.get("/admin/autoscaling")
    async def autoscaling(request: Request) -> Response:
        needs = await gateway_of(request).fleet.refresh()
        return _json({"object": "list", "data": [need.to_json() for need in needs.values()]})

    app.add_exception_handler(RedisError, _unavailable)


async def _verdicts(gateway: Gateway, months: list[str]) -> list[Verdict]:
    """The fast variants' standing per task over ``months``: parity's revisions in the period
    (any gateway's), else the policy now; with this gateway's online tests where it runs them."""
    config = gateway.current.config
    parity = gateway.online_parity
    table = [] if parity is None else parity.verdicts.table()
    online = {(row["variant"], row["task"]): (str(row["conclusion"]), int(row["pairs"])) for row in table}
    revised = {key: (r.allowed, r.at) for key, r in (await gateway.parity_journal.revisions(months)).items()}
    variants = [v for model in config.models.values() for v in model.variants.values()]
    return verdicts(variants, sorted(config.policy.tasks), online, revised)


def _public(record: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in record.items() if k != "hash"}
