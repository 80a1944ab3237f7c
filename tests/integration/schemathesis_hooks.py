"""Schemathesis hooks for test_bad_input.py (loaded through ``SCHEMATHESIS_HOOKS``): most generated
bodies name a model the gateway serves, so generated requests reach validation, routing and the
replicas, not only the 404 for an unknown model."""

from __future__ import annotations

from typing import Any

import schemathesis

MODELS = ("smollm2", "smollm2:fast", "smollm2:standard", "fast")


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    if isinstance(body, dict) and "model" in body:
        choice = len(repr(body)) % (len(MODELS) + 1)  # deterministic per body; one share keeps its random name
        if choice < len(MODELS):
            body["model"] = MODELS[choice]
    return body
