"""A replica reports its engine role and chunk budget (the simulator's /metrics, Duet's info
gauge); the gateway's parser reads them and the store carries them to routing's ReplicaState.
A real vLLM reports neither: they stay None and routing keeps the configured Replica.engine."""

from __future__ import annotations

import asyncio

import pytest

from gateway.domain import EngineRole
from gateway.state.store import InMemoryStateStore
from gateway.state.vllm_metrics import ENGINE_CONFIG, parse_vllm_metrics
from serving.sim.engine.engine import Engine
from serving.sim.profile import load_profile
from serving.sim.server import metrics as sim_metrics
from serving.sim.server.metrics import SimMetrics
from tests.gateway.state.test_store import SETTINGS, Clock


def scraped(role: str, budget: int) -> str:
    profile = load_profile("h100-70b-bf16").with_engine(role=role, max_num_batched_tokens=budget)
    metrics = SimMetrics(profile, "llama-3-70b")
    metrics.bind(Engine(profile))
    return metrics.render().decode()


@pytest.mark.parametrize(("role", "budget"), [("both", 8192), ("prefill", 16384), ("decode", 512)])
def test_the_simulators_metrics_report_the_role_and_budget_the_gateway_reads(role: str, budget: int) -> None:
    stats = parse_vllm_metrics(scraped(role, budget))
    assert (stats.engine_role, stats.chunk_budget) == (role, budget)
    assert stats.running == 0  # vLLM's own families are read as before


def test_the_info_gauges_name_is_one_on_both_sides() -> None:
    assert sim_metrics.ENGINE_CONFIG == ENGINE_CONFIG


def test_a_scrape_without_the_info_gauge_reports_no_role() -> None:
    stats = parse_vllm_metrics('vllm:num_requests_running{engine="0",model_name="m"} 2.0\n')
    assert stats.engine_role is None and stats.chunk_budget is None


def test_the_store_carries_the_reported_role_to_routing_until_the_scrape_is_stale() -> None:
    clock = Clock()
    store = InMemoryStateStore(SETTINGS, clock=clock)
    asyncio.run(store.record_stats("r1", parse_vllm_metrics(scraped("decode", 512)), at=clock.t))
    state = store.snapshot()["r1"]
    assert state.role is EngineRole.DECODE and state.chunk_budget == 512
    clock.t += SETTINGS.stale_after_s + 1
    stale = store.snapshot()["r1"]
    assert stale.role is None and stale.chunk_budget is None


def test_an_unknown_reported_role_is_not_trusted() -> None:
    clock = Clock()
    store = InMemoryStateStore(SETTINGS, clock=clock)
    text = f'{ENGINE_CONFIG}{{max_num_batched_tokens="2048",role="encode"}} 1.0\n'
    asyncio.run(store.record_stats("r1", parse_vllm_metrics(text), at=clock.t))
    assert store.snapshot()["r1"].role is None and store.snapshot()["r1"].chunk_budget == 2048
