"""What each attempt sends upstream: vLLM's ``priority`` per replica (gateway/flow/upstream.py),
table-driven on plain data (the director's planning, no I/O)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from gateway.flow.upstream import upstream_request
from tests.gateway.flow.test_director import DEMO, Rig

HELLO = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}


def rig(standard: str, fast: str) -> Rig:
    raw = copy.deepcopy(DEMO)
    raw["models"]["smollm2"]["variants"]["standard"]["scheduling"] = standard
    raw["models"]["smollm2"]["variants"]["fast"]["scheduling"] = fast
    return Rig(raw)


def sent(r: Rig, body: dict[str, Any], headers: dict[str, str], path: str = "/v1/chat/completions") -> dict[str, Any]:
    """The body each variant's replica would get: variant -> its ``priority`` (None: none sent)."""
    exchange = r.open(body, headers)
    request = upstream_request(exchange, path, {"model": "smollm2", **body})
    return {variant: orjson.loads(request.body_for(replica)).get("priority") for variant, replica in r.replicas.items()}


@pytest.mark.parametrize(("header", "claimed", "expected"), [
    ({}, None, 0),                                      # chat's default class: interactive
    ({"x-duet-priority": "batch"}, None, 1),
    ({"x-duet-priority": "sheddable"}, None, 2),
    ({"x-duet-priority": "interactive"}, -5, 0),        # the client cannot jump its class
    ({"x-duet-priority": "batch"}, 9, 9),               # but may go later
])
def test_only_priority_scheduling_replicas_get_the_class(header: dict[str, str], claimed: int | None,
                                                         expected: int) -> None:
    body = HELLO if claimed is None else {**HELLO, "priority": claimed}
    assert sent(rig("priority", "fcfs"), body, header) == {"standard": expected, "fast": None}
    assert sent(rig("fcfs", "fcfs"), body, header) == {"standard": None, "fast": None}


def test_apis_without_the_field_in_vllm_pass_the_body_as_sent() -> None:
    r = rig("priority", "priority")
    assert sent(r, HELLO, {"x-duet-priority": "batch"}, "/v1/messages") == {"standard": None, "fast": None}
    assert sent(r, {**HELLO, "priority": 3}, {}, "/tokenize") == {"standard": 3, "fast": 3}
