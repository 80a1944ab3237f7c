"""Schemathesis hooks for the generated-request test (loaded through ``SCHEMATHESIS_HOOKS``): most
generated bodies name a model the gateway serves, so generated requests reach validation, routing and
the replicas, not only the 404 for an unknown model; and each request carries the key its route wants
(the gate's own route table: an API key, or the admin key for admin routes and /metrics), so that with
keys required the generated requests get past authentication instead of all being 401s."""

from __future__ import annotations

import os
from typing import Any

import schemathesis

from gateway.api.gate import ROUTES, Guard

MODELS = ("smollm2", "smollm2:fast", "smollm2:standard", "fast")


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    if isinstance(body, dict) and "model" in body:
        choice = len(repr(body)) % (len(MODELS) + 1)  # deterministic per body; one share keeps its random name
        if choice < len(MODELS):
            body["model"] = MODELS[choice]
    return body


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    api_key, admin_key = os.environ.get("DUET_TEST_API_KEY"), os.environ.get("DUET_TEST_ADMIN_KEY")
    guard = ROUTES.find(case.method.upper(), case.path).guard
    key = admin_key if guard in (Guard.ADMIN, Guard.METRICS) else api_key
    if key is not None:
        case.headers = {**(case.headers or {}), "authorization": f"Bearer {key}"}
    return case
