"""vLLM's ``priority`` field as the gateway sends it (gateway/flow/upstream.py), seen by recording
replicas: the request's class goes to a variant that schedules by priority, never to one that
schedules first come first served; a client's own value may move it later, never earlier than
its key's tier allows."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loadtests.launch.gateway_process import GatewayProcess

from .recording_replica import RecordingReplica, gateway_over_recorders

ADMIN_KEY = "admin-" + uuid.uuid4().hex
CHAT = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 2}


def priority_on_standard(raw: dict[str, Any]) -> None:
    raw["models"]["smollm2"]["variants"]["standard"]["scheduling"] = "priority"
    raw["models"]["smollm2"]["variants"]["fast"]["scheduling"] = "fcfs"
    raw["access"] = {"require_keys": True, "keys_file": "keys.json",
                     "tiers": {"any": {}, "batch": {"priority": "batch"}}}


Setup = tuple[GatewayProcess, dict[str, RecordingReplica], dict[str, str]]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp: Path = tmp_path_factory.mktemp("priority")
    with gateway_over_recorders(tmp, edit=priority_on_standard, env={"DUET_ADMIN_KEY": ADMIN_KEY}) as (gateway, replicas):
        keys = {}
        for tier in ("any", "batch"):
            made = httpx.post(gateway.url + "/admin/keys", json={"name": f"k-{tier}", "tier": tier},
                              headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=10)
            assert made.status_code == 201, made.text
            keys[tier] = made.json()["key"]
        yield gateway, replicas, keys


def sent(setup: Setup, variant: str, body: dict[str, Any], *, tier: str = "any", priority: str | None = None,
         path: str = "/v1/chat/completions") -> dict[str, Any]:
    """The body the replica of ``variant`` received for ``body`` pinned to it."""
    gateway, replicas, keys = setup
    headers = {"authorization": f"Bearer {keys[tier]}"}
    if priority is not None:
        headers["x-duet-priority"] = priority
    before = len(replicas[variant].requests)
    reply = httpx.post(gateway.url + path, json={"model": f"smollm2:{variant}", **body}, headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    assert len(replicas[variant].requests) == before + 1
    received: dict[str, Any] = replicas[variant].requests[-1].json()
    return received


@pytest.mark.parametrize(("tier", "header", "claimed", "expected"), [
    ("any", "interactive", None, 0),
    ("any", "batch", None, 1),
    ("any", "sheddable", None, 2),
    ("batch", "interactive", None, 1),   # the tier's cap holds: no jumping the queue by header
    ("any", "interactive", -100, 0),     # nor by vLLM's own field
    ("batch", None, -1, 1),
    ("any", "batch", 7, 7),              # a client may always ask to go later
])
def test_a_priority_scheduling_replica_gets_the_request_class(keyed: Setup, tier: str, header: str | None,
                                                              claimed: int | None, expected: int) -> None:
    body = CHAT if claimed is None else {**CHAT, "priority": claimed}
    assert sent(keyed, "standard", body, tier=tier, priority=header)["priority"] == expected


def test_completions_and_responses_carry_it_too(keyed: Setup) -> None:
    completion = sent(keyed, "standard", {"prompt": "Hello", "max_tokens": 2}, priority="batch", path="/v1/completions")
    assert completion["priority"] == 1
    response = sent(keyed, "standard", {"input": "Hello", "max_output_tokens": 2}, priority="sheddable",
                    path="/v1/responses")
    assert response["priority"] == 2


def test_a_first_come_first_served_replica_gets_no_priority_even_the_clients(keyed: Setup) -> None:
    assert "priority" not in sent(keyed, "fast", CHAT, priority="sheddable")
    assert "priority" not in sent(keyed, "fast", {**CHAT, "priority": 5})


def test_a_priority_that_is_not_an_integer_is_a_400_that_never_reaches_a_replica(keyed: Setup) -> None:
    gateway, replicas, keys = keyed
    before = {v: len(r.requests) for v, r in replicas.items()}
    for bad in ("high", 1.5, True, 2**63):
        reply = httpx.post(gateway.url + "/v1/chat/completions", json={"model": "smollm2", **CHAT, "priority": bad},
                           headers={"authorization": f"Bearer {keys['any']}"}, timeout=10)
        assert reply.status_code == 400, (bad, reply.text)
        assert reply.json()["error"]["param"] == "priority"
    assert {v: len(r.requests) for v, r in replicas.items()} == before
