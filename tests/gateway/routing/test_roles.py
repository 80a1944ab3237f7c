"""The engine-role filter: a client's request goes whole only to a replica that prefills and
decodes; the role a replica reports wins over the configured one."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.domain import Candidate, EngineConfig, EngineRole
from gateway.routing.predictors import StepModelPredictor
from gateway.routing.registry import PLUGIN_TYPES
from gateway.routing.roles import ENGINE_ROLE, EngineRoleFilter, chunk_budget, max_batch, role_of

from .factories import STANDARD, candidate, request

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


def budgets(max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None, **state: object) -> Candidate:
    base = candidate(**state)
    return dataclasses.replace(base, replica=dataclasses.replace(
        base.replica, engine=EngineConfig(max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)))


def test_a_replicas_own_chunk_budget_and_batch_replace_its_variants_prior() -> None:
    assert chunk_budget(budgets()) == STANDARD.speed.max_num_batched_tokens
    assert chunk_budget(budgets(512)) == 512
    assert chunk_budget(budgets(512, chunk_budget=2048)) == 2048  # the replica says otherwise: believe it
    assert max_batch(budgets()) == STANDARD.speed.max_num_seqs and max_batch(budgets(max_num_seqs=8)) == 8


def test_the_step_model_chunks_a_long_prompt_by_the_replicas_own_budget() -> None:
    long_prompt = request(input_tokens=4000)
    default = StepModelPredictor().predict(long_prompt, budgets(running=4))
    small = StepModelPredictor().predict(long_prompt, budgets(512, running=4))
    steps = -(-4000 // (512 - 4)) - -(-4000 // (STANDARD.speed.max_num_batched_tokens - 4))
    assert small.ttft_ms > default.ttft_ms
    assert small.model_ttft_ms - default.model_ttft_ms == pytest.approx(steps * 1e3 * (
        STANDARD.speed.decode_s_per_token + STANDARD.speed.per_seq_s * 4), rel=0.05)
