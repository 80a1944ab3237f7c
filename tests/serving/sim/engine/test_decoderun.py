"""Decode runs change nothing but speed: the same calls give the same events and state as the
step-by-step engine (bit for bit, jitter included)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from serving.sim.engine.decoderun import DecodeRun, silent_steps
from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Event, Finished, SimRequest, TokensOut
from serving.sim.engine.kvcache import KVCache
from serving.sim.engine.sequence import Seq
from serving.sim.profile import Profile, load_profile


def reported(events: list[Event]) -> list[Event]:
    """What an engine without token events reports: first tokens and finishes."""
    return [e for e in events if isinstance(e, Finished) or (isinstance(e, TokensOut) and e.first)]


def drive(engine: Engine, seed: int, *, natural: bool) -> tuple[list[Event], list[object], int]:
    """Poisson arrivals with looks in between (advance to random times, read the gauges), an
    abort and a slowdown change; every event, every look, and the calls the drain took."""
    rng = random.Random(seed)
    events: list[Event] = []
    looks: list[object] = []
    now = 0.0
    for i in range(300):
        now += rng.expovariate(8.0)
        for _ in range(rng.randint(0, 2)):  # someone looks mid-way (a scrape)
            events += engine.advance(now - rng.random() * 0.1)
            looks.append((engine.snapshot(), dataclasses.replace(engine.counters)))
        events += engine.advance(now)
        natural_tokens = rng.randint(20, 400) if natural else None
        engine.submit(SimRequest(f"r{i}", rng.randint(50, 3000), 500, natural_tokens=natural_tokens,
                                 ignore_eos=not natural), now)
        if i == 150:
            engine.abort("r140", now)
        if i == 200:
            engine.slowdown = 2.0
    calls = 0
    while (at := engine.next_event_time()) is not None:
        events += engine.advance(at)
        calls += 1
    looks.append((engine.snapshot(), dataclasses.replace(engine.counters)))
    return reported(events), looks, calls


@pytest.mark.parametrize("name, natural", [("h100-70b-bf16", True), ("h100-70b-fp8", False), ("cpu-smollm2-bf16", True)])
def test_runs_report_exactly_what_single_steps_report(name: str, natural: bool) -> None:
    profile = load_profile(name)
    stepwise = drive(Engine(profile, seed=3, token_events=True), 11, natural=natural)
    with_runs = drive(Engine(profile, seed=3, token_events=False), 11, natural=natural)
    assert with_runs[:2] == stepwise[:2]
    assert sum(isinstance(e, Finished) for e in stepwise[0]) > 100
    assert with_runs[2] < stepwise[2]  # runs were taken (the drain needed fewer calls)


def test_runs_respect_a_small_kv_cache() -> None:
    bf16 = load_profile("h100-70b-bf16")
    small: Profile = dataclasses.replace(bf16, engine=dataclasses.replace(bf16.engine, kv_cache_tokens=40000,
                                                                          max_model_len=16000))
    stepwise = drive(Engine(small, seed=1, token_events=True), 5, natural=True)
    with_runs = drive(Engine(small, seed=1, token_events=False), 5, natural=True)
    assert with_runs[:2] == stepwise[:2]
    assert stepwise[1][-1][1].preemptions > 0  # type: ignore[index]


def test_silent_steps_stop_before_a_finish_and_a_full_cache() -> None:
    kv = KVCache(total_tokens=64 * 16, block_size=16)
    seqs = []
    for target, computed in ((40, 100), (200, 300)):
        seq = Seq(SimRequest("r", computed, 1000), 0.0, 0.0, target)
        seq.computed, seq.generated, seq.blocks = computed, 1, kv.grow(0, computed)
        seqs.append(seq)
    assert silent_steps(seqs, kv) == min(32, 40 - 1 - 1)  # the first ends at its 39th step
    free_tokens = kv.free_blocks * 16
    kv.used_blocks = kv.total_blocks - 1  # one block left: the batch outgrows it within 16 steps
    assert silent_steps(seqs, kv) < 16 < free_tokens
    assert DecodeRun(seqs, [1.0, 2.0], None).steps_ended_by(1.5) == 1
