"""Closed-loop clients against one replica or a prefill/decode pair, in virtual time."""

from __future__ import annotations

import statistics

import pytest

from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Finished, SimRequest
from serving.sim.engine.kvtransfer import transfer_s
from serving.sim.fidelity import clients
from serving.sim.fidelity.published import PublishedPoint, Scenario, serve, simulate
from serving.sim.profile import Profile, load_profile


@pytest.fixture
def fp8() -> Profile:
    return load_profile("h100-70b-fp8")


def make(i: int) -> SimRequest:
    return SimRequest(f"r{i}", 3000, 150, ignore_eos=True)


def in_flight_at_most(done: list[Finished], limit: int) -> bool:
    """Whether no instant had more than ``limit`` requests between arrival and finish."""
    edges = sorted([(d.time - d.e2e_s, 1) for d in done] + [(d.time, -1) for d in done], key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, step in edges:
        level += step
        peak = max(peak, level)
    return peak <= limit


def test_a_closed_loop_keeps_its_concurrency_and_answers_every_request(fp8: Profile) -> None:
    done = clients.closed_loop(Engine(fp8, seed=0), make, prompts=20, concurrency=4)
    assert sorted(d.request_id for d in done) == sorted(f"r{i}" for i in range(20))
    assert all(d.output_tokens == 150 for d in done) and in_flight_at_most(done, 4)


def test_a_p_d_pair_answers_every_request_from_the_decode_engine_in_the_clients_times(fp8: Profile) -> None:
    prefill = Engine(fp8.with_engine(role="prefill"), seed=0)
    decode = Engine(fp8.with_engine(role="decode"), seed=1)
    done = clients.closed_loop_pd(prefill, decode, make, prompts=12, concurrency=3)
    assert sorted(d.request_id for d in done) == sorted(f"r{i}" for i in range(12))
    assert all(d.output_tokens == 150 for d in done) and in_flight_at_most(done, 3)
    assert decode.counters.kv_transfers == 12 and prefill.counters.generation_tokens == 12  # one token each there
    alone = done[0]  # the first three start together; even the fastest waits prefill, link and a step
    floor = 3000 * fp8.step.prefill_s_per_token + transfer_s(fp8.shape, fp8.kv_link, 3000)  # type: ignore[arg-type]
    assert alone.ttft_s is not None and alone.ttft_s > floor


def tpot_ms(done: list[Finished]) -> float:
    return 1000 * statistics.fmean((d.e2e_s - (d.ttft_s or 0.0)) / (d.output_tokens - 1) for d in done)


def test_at_the_same_load_disaggregation_keeps_decode_free_of_prefill_stalls(fp8: Profile) -> None:
    """The published trade: the aggregated replica's inter-token latency grows with the prompts
    prefilled between its decode steps; the decode replica of a pair sees none of them."""
    def scenario(disaggregated: bool) -> Scenario:
        return Scenario("h100-70b-fp8", "chat", 3000, 150, 96, concurrency=16, disaggregated=disaggregated)

    def value(metric: str, disaggregated: bool) -> float:
        return simulate(PublishedPoint(0, "", scenario(disaggregated), metric, 1.0, False), seeds=1)

    assert value("tpot_mean_ms", True) < 0.75 * value("tpot_mean_ms", False)


def test_a_smaller_chunk_budget_costs_a_step_base_per_chunk_so_mean_tpot_does_not_fall(fp8: Profile) -> None:
    """What the budget buys is the tail (the engine's test: the worst gap halves), not the mean:
    every extra chunk is an extra step paying the fixed cost, so the mean per-request TPOT of
    a closed loop of 3,000-token prompts does not fall with the budget."""
    def tpot(budget: int) -> float:
        scenario = Scenario("h100-70b-fp8", "chat", 3000, 150, 96, concurrency=16, max_num_batched_tokens=budget)
        return simulate(PublishedPoint(0, "", scenario, "tpot_mean_ms", 1.0, False), seeds=1)

    assert tpot(1024) >= tpot(8192)


def test_warm_up_requests_are_sent_and_left_out() -> None:
    scenario = Scenario("h100-70b-fp8", "chat", 3000, 150, 8, concurrency=4, warmup=4)
    done = serve(load_profile("h100-70b-fp8"), scenario, seed=0)
    assert len(done) == 8


def test_a_disaggregated_scenario_needs_a_closed_loop(fp8: Profile) -> None:
    with pytest.raises(ValueError, match="closed loop"):
        simulate(PublishedPoint(0, "", Scenario("h100-70b-fp8", "chat", 100, 10, 4, qps=1.0, disaggregated=True),
                                "tpot_mean_ms", 1.0, False), seeds=1)
