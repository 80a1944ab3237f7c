"""The engine-role filter: a client's request goes whole only to a replica that prefills and
decodes; the role a replica reports wins over the configured one."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.domain import Candidate, EngineConfig, EngineRole
from gateway.routing.registry import PLUGIN_TYPES
from gateway.routing.roles import ENGINE_ROLE, EngineRoleFilter, role_of

from .factories import candidate, request

NIXL = "NixlConnector"


def configured(role: EngineRole, reported: EngineRole | None = None) -> Candidate:
    base = candidate(role=reported)
    connector = None if role is EngineRole.BOTH else NIXL
    replica = dataclasses.replace(base.replica, engine=EngineConfig(role, kv_connector=connector))
    return dataclasses.replace(base, replica=replica)


CASES = [
    # (configured role, reported role, kept)
    (EngineRole.BOTH, None, True),
    (EngineRole.PREFILL, None, False),
    (EngineRole.DECODE, None, False),
    (EngineRole.BOTH, EngineRole.BOTH, True),
    (EngineRole.BOTH, EngineRole.DECODE, False),  # the replica says otherwise: believe it
    (EngineRole.PREFILL, EngineRole.BOTH, True),
]


@pytest.mark.parametrize(("role", "reported", "kept"), CASES)
def test_engine_role_verdicts(role: EngineRole, reported: EngineRole | None, kept: bool) -> None:
    result, reason = EngineRoleFilter().keep(request(), configured(role, reported))
    assert result is kept
    assert (reason == "prefills and decodes") if kept else ("-only replica" in reason)


def test_the_reported_role_wins_over_the_configured_one() -> None:
    assert role_of(configured(EngineRole.PREFILL)) is EngineRole.PREFILL
    assert role_of(configured(EngineRole.PREFILL, EngineRole.DECODE)) is EngineRole.DECODE


def test_it_is_registered_by_its_kebab_case_type() -> None:
    assert ENGINE_ROLE == "engine-role"
    assert PLUGIN_TYPES[ENGINE_ROLE].kind == "filter" and PLUGIN_TYPES[ENGINE_ROLE].cls is EngineRoleFilter
