"""Engine roles in the engine model: the chunk budget's cost, prefill-only and decode-only
engines, KV transfer time and failure (never a lost request)."""

from __future__ import annotations

import dataclasses

import pytest

from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Finished, Refusal, SimRequest, TokensOut
from serving.sim.engine.kvtransfer import TransferFaults, transfer_s
from serving.sim.profile import KVLink, ModelShape, Profile, ProfileError, load_profile


def drain(engine: Engine) -> list[TokensOut | Finished]:
    events: list[TokensOut | Finished] = []
    while (at := engine.next_event_time()) is not None:
        events += engine.advance(at)
    return events


def finished(events: list[TokensOut | Finished]) -> dict[str, Finished]:
    return {e.request_id: e for e in events if isinstance(e, Finished)}


@pytest.fixture
def bf16() -> Profile:
    return load_profile("h100-70b-bf16")


def test_kv_bytes_per_token_is_layers_heads_dims_k_and_v_and_dtype() -> None:
    assert ModelShape(80, 8, 128, 2).kv_bytes_per_token == 327_680  # Llama 3 70B, bf16 KV
    assert ModelShape(32, 8, 128, 1).kv_bytes_per_token == 65_536  # Llama 3 8B, fp8 KV


def test_transfer_time_is_latency_plus_bytes_over_bandwidth() -> None:
    shape, link = ModelShape(80, 8, 128, 2), KVLink(gb_per_s=180, latency_s=0.002)
    assert transfer_s(shape, link, 0) == pytest.approx(0.002)
    assert transfer_s(shape, link, 10_000) == pytest.approx(0.002 + 3.2768e9 / 180e9)


@pytest.mark.parametrize(("budget", "steps"), [(8192, 1), (2048, 4), (512, 16)])
def test_a_long_prompt_takes_one_step_per_chunk_of_the_budget(bf16: Profile, budget: int, steps: int) -> None:
    engine = Engine(bf16.with_engine(max_num_batched_tokens=budget), seed=0)
    engine.submit(SimRequest("long", 8000, 1, ignore_eos=True), 0.0)
    drain(engine)
    assert engine.counters.steps == steps


def test_a_smaller_chunk_budget_stalls_co_scheduled_decodes_less_and_delays_the_prompt(bf16: Profile) -> None:
    """The trade vLLM's ``max_num_batched_tokens`` makes: the worst inter-token gap of running
    decodes falls with the budget, the long prompt's TTFT grows."""
    gaps, ttfts = [], []
    for budget in (8192, 2048):
        engine = Engine(bf16.with_engine(max_num_batched_tokens=budget), seed=0)
        for i in range(8):
            engine.submit(SimRequest(f"d{i}", 100, 200, ignore_eos=True), 0.0)
        events = list(engine.advance(0.5))
        engine.submit(SimRequest("long", 16000, 1, ignore_eos=True), 0.5)
        events += drain(engine)
        times = [e.time for e in events if isinstance(e, TokensOut) and e.request_id == "d0"]
        gaps.append(max(b - a for a, b in zip(times, times[1:], strict=False)))
        ttfts.append(finished(events)["long"].ttft_s)
    assert gaps[1] < gaps[0] / 2
    assert ttfts[1] > ttfts[0]


def test_a_prefill_role_engine_never_decodes_a_clients_answer(bf16: Profile) -> None:
    engine = Engine(bf16.with_engine(role="prefill"), seed=0)
    assert engine.submit(SimRequest("plain", 500, 200), 0.0) is Refusal.PREFILL_ONLY
    assert engine.submit(SimRequest("handoff", 500, 200, ignore_eos=True, remote_decode=True), 0.0) is None
    events = drain(engine)
    done = finished(events)["handoff"]
    assert done.output_tokens == 1 and done.kv_ready and done.reason == "length"
    assert sum(e.count for e in events if isinstance(e, TokensOut)) == 1


def test_a_decode_role_engine_never_takes_a_prompt_without_transferred_kv(bf16: Profile) -> None:
    engine = Engine(bf16.with_engine(role="decode"), seed=0)
    assert engine.submit(SimRequest("plain", 500, 20), 0.0) is Refusal.DECODE_ONLY
    assert engine.submit(SimRequest("handed", 4000, 20, ignore_eos=True, remote_prefill=True), 0.0) is None
    done = finished(drain(engine))["handed"]
    assert done.output_tokens == 20 and done.cached_tokens == 3999  # only the last token recomputed
    expected = bf16.step.frontend_s + transfer_s(bf16.shape, bf16.kv_link, 4000)  # type: ignore[arg-type]
    assert done.ttft_s is not None and expected < done.ttft_s < expected + 0.03  # one short step after landing
    assert engine.counters.kv_transfers == 1 and engine.counters.kv_transfer_bytes == 4000 * 327_680
    assert engine.counters.prefix_cache_hits == 0  # the connector's KV, not a cache hit


def test_prefill_then_decode_hands_one_request_across(bf16: Profile) -> None:
    prefill = Engine(bf16.with_engine(role="prefill"), seed=0)
    decode = Engine(bf16.with_engine(role="decode"), seed=0)
    prefill.submit(SimRequest("r", 2000, 1, ignore_eos=True, remote_decode=True), 0.0)
    ready = finished(drain(prefill))["r"]
    decode.submit(SimRequest("r", 2000, 100, ignore_eos=True, remote_prefill=True), ready.time)
    answer = finished(drain(decode))["r"]
    assert answer.output_tokens == 100 and answer.time > ready.time


def test_a_transfer_that_keeps_a_waiting_request_does_not_block_the_queue(bf16: Profile) -> None:
    slow = dataclasses.replace(bf16, kv_link=KVLink(gb_per_s=1, latency_s=0.0))
    engine = Engine(slow, seed=0)
    engine.submit(SimRequest("far", 30_000, 2, ignore_eos=True, remote_prefill=True), 0.0)  # ~10 s on the link
    engine.submit(SimRequest("near", 100, 2, ignore_eos=True), 0.0)
    done = finished(drain(engine))
    assert done["near"].time < 1.0 < done["far"].time


@pytest.mark.parametrize("policy", ["recompute", "fail"])
def test_a_failed_transfer_ends_in_a_fallback_or_a_clear_error_never_a_lost_request(bf16: Profile, policy: str) -> None:
    engine = Engine(bf16.with_engine(role="decode"), seed=0, transfer_faults=TransferFaults(rate=0.5, policy=policy))
    for i in range(40):
        engine.submit(SimRequest(f"r{i}", 1000, 10, ignore_eos=True, remote_prefill=True), i * 0.01)
    done = finished(drain(engine))
    assert sorted(done) == sorted(f"r{i}" for i in range(40))  # every request ends
    failed = engine.counters.kv_transfer_failures
    assert 5 < failed < 35
    if policy == "recompute":  # prefilled here instead: late, but answered in full
        assert all(d.reason == "length" and d.output_tokens == 10 for d in done.values())
        assert sum(d.cached_tokens == 0 for d in done.values()) == failed
    else:  # no token, a reason the caller can act on (retry on another replica)
        lost = [d for d in done.values() if d.reason == "error"]
        assert len(lost) == failed and all(d.output_tokens == 0 and d.ttft_s is None for d in lost)
    assert engine.in_flight() == 0


def test_an_aborted_transfer_frees_its_request(bf16: Profile) -> None:
    engine = Engine(bf16.with_engine(role="decode"), seed=0)
    engine.submit(SimRequest("r", 1000, 10, remote_prefill=True), 0.0)
    engine.abort("r", 0.001)
    assert finished(engine.advance(0.001))["r"].reason == "abort" and engine.in_flight() == 0


def test_a_role_that_hands_kv_needs_the_models_shape_and_link() -> None:
    with pytest.raises(ProfileError, match=r"engine.role: 'prefill' hands KV"):
        load_profile("fast-test").with_engine(role="prefill")
    with pytest.raises(ProfileError, match=r"engine.role: must be one of both, prefill, decode"):
        load_profile("fast-test").with_engine(role="encode")


def test_the_default_role_and_budget_change_nothing(bf16: Profile) -> None:
    """``both`` with the profile's own budget is the engine as it was: same events, same seed."""
    runs = []
    for profile in (bf16, bf16.with_engine(role="both", max_num_batched_tokens=bf16.engine.max_num_batched_tokens)):
        engine = Engine(profile, seed=3)
        for i in range(30):
            engine.submit(SimRequest(f"r{i}", 300 + 97 * i, 50), i * 0.05)
        runs.append(drain(engine))
    assert runs[0] == runs[1]
