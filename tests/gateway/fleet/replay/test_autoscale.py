"""The autoscaled fleet in the replay: the gauge's arithmetic and an HPA in virtual time, replicas
that join after their start-up and leave after draining, and the bill from ask to drain."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter, deque
from types import MappingProxyType

import pytest

from gateway.autoscaling import Autoscaling, GroupShare, TaskDemand, model_need, split_replicas
from gateway.fleet.capacity.roles import PD_SPLIT
from gateway.fleet.replay.autoscale import (
    AutoscaledFleet,
    AutoscaledRun,
    Hpa,
    autoscaled_config,
    removal_order,
    run_autoscaled,
    shrink,
)
from gateway.fleet.replay.engine_mix import added_engine, by_groups, groups_of
from gateway.fleet.replay.fleet import FleetTimeline, ReplicaLife
from gateway.fleet.replay.setup import parse_cluster, policy_config
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.workload.traces import Arrival
from gateway.flow import DuetConfig, EngineConfig, EngineRole, Replica
from gateway.scaling import DemandMeter

STARTUP_S = 90.0
RISE_S, FALL_S, END_S = 300.0, 600.0, 1000.0
AUTOSCALING = Autoscaling(scrape_interval_s=15.0, rate_window_s=60.0, scale_down_stabilization_s=120.0, max_replicas=12)
# W4A16's fast variant serves chat and coding; parity keeps long-context on standard, so the
# gauge keeps one standard replica whatever the demand (the floor), and this traffic gives it none.
CLUSTER = parse_cluster("h100-70b-w4a16:standard=2,fast=1")


def step_arrivals(seed: int = 0) -> list[Arrival]:
    """Chat and coding at 0.5/s, 6/s from RISE_S, 0.3/s from FALL_S to END_S (Poisson)."""
    rng, at, schedule = random.Random(seed), 0.0, []
    while True:
        at += rng.expovariate(0.5 if at < RISE_S else 6.0 if at < FALL_S else 0.3)
        if at >= END_S:
            return schedule
        task = rng.choice(("chat", "coding"))
        schedule.append(Arrival(at, task, rng.randint(2000, 8000), rng.randint(50, 600) if task == "chat" else
                                rng.randint(20, 300)))


@pytest.fixture(scope="module")
def run():
    schedule = step_arrivals()
    results, timeline = run_autoscaled(policy_config(CLUSTER, "duet"), CLUSTER.profiles(), schedule,
                                       AutoscaledRun(AUTOSCALING, {"standard": 2, "fast": 1}, startup_s=STARTUP_S))
    return schedule, results, timeline


def lives_by_id(timeline: FleetTimeline) -> dict[str, ReplicaLife]:
    return {life.replica.id: life for life in timeline.lives}


def dispatched_at(result) -> float:
    return result.arrival_s + result.waited_s


def test_every_request_went_to_a_replica_that_was_ready_and_not_withdrawn(run):
    _, results, timeline = run
    lives = lives_by_id(timeline)
    served = [r for r in results if r.replica is not None]
    assert served
    for result in served:
        life = lives[result.replica]
        assert life.ready_s <= dispatched_at(result)
        assert life.removed_s is None or dispatched_at(result) < life.removed_s
    initial = {life.replica.id for life in timeline.lives if life.asked_s == 0.0}
    assert any(r.replica not in initial for r in served)  # the added replicas served too


def test_the_monitor_never_reports_a_replica_that_is_not_ready(monkeypatch):
    """Every health check the replay records is of a replica ready and not withdrawn then."""
    config = autoscaled_config(policy_config(CLUSTER, "duet"), AUTOSCALING, {"standard": 1, "fast": 1})
    fleet = AutoscaledFleet(config, STARTUP_S)
    replay = Replay(config, CLUSTER.profiles(), fleet=fleet)
    checks: list[tuple[str, float]] = []
    record_health = replay._store.record_health

    def recorded(replica_id: str, healthy: bool, at: float):
        checks.append((replica_id, at))
        return record_health(replica_id, healthy, at)

    monkeypatch.setattr(replay._store, "record_health", recorded)
    replay.run(step_arrivals()[:1200])
    lives = lives_by_id(fleet.timeline(replay.now))
    assert len(lives) > 2
    assert all(lives[rid].ready_at(at) for rid, at in checks)
    added = {rid for rid, life in lives.items() if life.asked_s > 0 and life.ready_s <= replay.now}
    assert added and added <= {rid for rid, _ in checks}


def test_a_step_up_adds_replicas_within_a_reading_that_serve_only_after_the_start_up(run):
    _, results, timeline = run
    added = [life for life in timeline.lives if life.asked_s > 0]
    assert added and all(life.variant == "fast" for life in added)
    first_ask = min(life.asked_s for life in added)
    assert RISE_S < first_ask <= RISE_S + 2 * AUTOSCALING.scrape_interval_s
    assert all(life.ready_s == life.asked_s + STARTUP_S for life in added)
    by_replica: dict[str, list[float]] = {}
    for result in results:
        if result.replica is not None:
            by_replica.setdefault(result.replica, []).append(dispatched_at(result))
    served = [life for life in added if life.replica.id in by_replica]
    assert served and all(min(by_replica[life.replica.id]) >= life.asked_s + STARTUP_S for life in served)


def test_a_step_down_removes_replicas_only_after_the_stabilisation_window(run):
    _, _, timeline = run
    window = AUTOSCALING.scale_down_stabilization_s
    removed = [life for life in timeline.lives if life.variant == "fast" and life.removed_s is not None]
    assert removed
    assert min(life.removed_s for life in removed) >= FALL_S + window
    fast = [r for r in timeline.readings if r.variant == "fast"]
    for reading in fast:  # each reading that scaled down: no higher reading in the window before it
        asked_before = sum(life.asked_at(reading.at_s - 1e-9) for life in timeline.lives if life.variant == "fast")
        if reading.scaled_to < asked_before:
            assert all(r.desired <= reading.scaled_to for r in fast if reading.at_s - window <= r.at_s <= reading.at_s)


def test_withdrawn_replicas_drain_and_no_request_is_lost(run):
    schedule, results, timeline = run
    assert len(results) == len(schedule)
    assert {r.status for r in results} <= {"ok", "rejected", "failed"}
    drained = 0
    for life in timeline.lives:
        if life.removed_s is None:
            continue
        own = [r for r in results if r.replica == life.replica.id]
        assert all(r.status == "ok" and dispatched_at(r) < life.removed_s for r in own)
        ends = [r.arrival_s + r.e2e_s for r in own]
        assert life.left_s == pytest.approx(max([*ends, life.removed_s]))
        drained += max(ends, default=life.removed_s) > life.removed_s
    assert drained  # some replica still had requests running when withdrawn


def test_the_parity_floor_is_never_crossed(run):
    """No standard demand: the standard variant goes from two replicas to its floor of one, never zero."""
    _, _, timeline = run
    standard = [r for r in timeline.readings if r.variant == "standard"]
    assert standard and all(r.desired == 1 and r.scaled_to >= 1 for r in standard)
    points = timeline.points("standard")
    assert points[0].asked == 2 and points[-1].asked == 1
    assert all(p.asked >= 1 and p.ready >= 1 for p in points)


def test_cost_counts_each_replica_from_its_ask_until_it_drained(run):
    _, _, timeline = run
    paid = sum(min(life.left_s if life.left_s is not None else timeline.end_s, timeline.end_s) - life.asked_s
               for life in timeline.lives)
    assert timeline.replica_seconds() == pytest.approx(paid)
    # Every H100 replica of the set costs 4 GPUs x $3/GPU-hour.
    assert timeline.fleet_usd(CLUSTER.replica_set) == pytest.approx(paid / 3600.0 * 12.0)
    summary = timeline.summary(CLUSTER.replica_set)
    assert summary["peak_asked"]["fast"] > 1 and summary["fleet_usd"] == pytest.approx(paid / 3600.0 * 12.0, abs=1e-3)


def replica(variant: str, index: int) -> Replica:
    return Replica(f"m/{variant}/{index}", "m", variant, f"http://x/{variant}/{index}")


def test_the_timeline_bills_from_ask_to_leave_and_counts_each_state():
    lives = (ReplicaLife(replica("fast", 0), 0.0, 0.0),  # all along
             ReplicaLife(replica("fast", 1), 10.0, 100.0, removed_s=50.0, left_s=50.0),  # removed while loading
             ReplicaLife(replica("fast", 2), 0.0, 0.0, removed_s=100.0, left_s=130.0))  # drained for 30 s
    timeline = FleetTimeline(lives, 200.0)
    assert timeline.replica_seconds("fast") == pytest.approx(200 + 40 + 130)
    assert [(p.at_s, p.asked, p.ready, p.draining) for p in timeline.points("fast")] == [
        (0.0, 2, 2, 0), (10.0, 3, 2, 0), (50.0, 2, 2, 0), (100.0, 1, 1, 1), (130.0, 1, 1, 0)]
    assert timeline.fleet_usd(CLUSTER.replica_set) == pytest.approx(370 / 3600 * 12)
    assert timeline.fleet_usd(parse_cluster("smoke").replica_set) is None  # no replica costs


@pytest.mark.parametrize(("readings", "current", "expected"), [
    ([(0, 3)], 3, 3),  # steady
    ([(0, 3), (15, 6)], 3, 6),  # up at once to the gauge
    ([(0, 6), (15, 2)], 6, 6),  # down: the window still holds 6
    ([(0, 6), (15, 2), (135, 2)], 6, 2),  # the 6 of t=0 left the 120 s window
    ([(0, 6), (60, 4), (135, 2)], 6, 4),  # down to the window's highest reading
    ([(0, 1), (15, 4)], 6, 4),  # more replicas than any reading: down to the highest
])
def test_the_hpa_scales_up_at_once_and_down_to_the_windows_highest_reading(readings, current, expected):
    hpa = Hpa(120.0, deque([(-1000.0, current)]))
    for at, gauge in readings:
        target = hpa.scale(gauge, current, at)
    assert target == expected


def test_a_shrinking_deployment_removes_loading_replicas_then_the_most_recently_ready():
    lives = [ReplicaLife(replica("fast", 0), 0.0, 0.0), ReplicaLife(replica("fast", 1), 50.0, 140.0),
             ReplicaLife(replica("fast", 2), 100.0, 190.0), ReplicaLife(replica("fast", 3), 120.0, 210.0),
             ReplicaLife(replica("fast", 4), 130.0, 220.0)]
    joined = {"m/fast/0", "m/fast/1", "m/fast/2"}  # 3 and 4 are still loading
    assert [life.replica.id for life in removal_order(lives, joined)] == [
        "m/fast/4", "m/fast/3", "m/fast/2", "m/fast/1", "m/fast/0"]


def test_an_autoscaler_that_never_changes_the_fleet_replays_as_the_fixed_fleet():
    """Readings every 15 s that keep the counts (min = max) change nothing: same results, byte for byte."""
    cluster = parse_cluster("h100-70b-w4a16:standard=1,fast=2")
    config = policy_config(cluster, "duet")
    schedule = step_arrivals(seed=1)[:600]
    fixed = Replay(config, cluster.profiles(), ReplaySettings(seed=4)).run(schedule)
    pinned = Autoscaling(max_replicas=1, min_replicas=MappingProxyType({"standard": 1, "fast": 2}))
    scaled, timeline = run_autoscaled(config, cluster.profiles(), schedule, AutoscaledRun(pinned), ReplaySettings(seed=4))
    assert repr(scaled) == repr(fixed)
    assert timeline.readings and all(r.scaled_to == {"standard": 1, "fast": 2}[r.variant] for r in timeline.readings)


def test_an_autoscaled_replay_needs_autoscaling_and_known_variants():
    config = policy_config(CLUSTER, "duet")
    with pytest.raises(ValueError, match="autoscaling"):
        AutoscaledFleet(config)
    with pytest.raises(ValueError, match="turbo"):
        autoscaled_config(config, AUTOSCALING, {"turbo": 1})



def test_replicas_asked_for_and_no_longer_wanted_while_loading_leave_at_once_unpaid_after():
    """A one-minute burst asks for replicas that take five minutes to load; the burst is long
    over by then, so they are removed while loading (first, as Kubernetes would): never routed
    to, paid from the ask to the removal."""
    rng = random.Random(2)
    burst = [Arrival(rng.uniform(0, 60), "chat", 6000, 300) for _ in range(360)]
    schedule = sorted([*burst, Arrival(420.0, "chat", 500, 50)], key=lambda a: a.at_s)
    quick = Autoscaling(scrape_interval_s=15.0, rate_window_s=15.0, scale_down_stabilization_s=30.0)
    results, timeline = run_autoscaled(policy_config(CLUSTER, "duet"), CLUSTER.profiles(), schedule,
                                       AutoscaledRun(quick, {"standard": 1, "fast": 1}, startup_s=300.0))
    unready = [life for life in timeline.lives if life.removed_s is not None and life.removed_s < life.ready_s]
    assert unready and all(life.left_s == life.removed_s for life in unready)
    assert not {life.replica.id for life in unready} & {r.replica for r in results}
    assert all(life.paid_s(timeline.end_s) == life.removed_s - life.asked_s for life in unready)
    assert len(results) == len(schedule)


def one_slot_per_replica() -> DuetConfig:
    config = policy_config(CLUSTER, "least-loaded")
    (model,) = config.models.values()
    variants = {name: dataclasses.replace(v, speed=dataclasses.replace(v.speed, max_num_seqs=1))
                for name, v in model.variants.items()}
    return dataclasses.replace(config, models={model.name: dataclasses.replace(model, variants=variants)})


QUICK = Autoscaling(scrape_interval_s=1.0, rate_window_s=3.0, max_replicas=3)
BURST = [Arrival(1.5, "extraction", 500, 64) for _ in range(8)]


def test_requests_waiting_in_the_gateway_go_to_a_replica_that_joins():
    """One slot per replica: a burst waits in the gateway's line; the replicas the gauge asks for
    join after their start-up and the line re-plans onto them before its deadline passes."""
    results, timeline = run_autoscaled(one_slot_per_replica(), CLUSTER.profiles(), BURST,
                                       AutoscaledRun(QUICK, {"standard": 1, "fast": 1}, startup_s=0.5))
    lives = lives_by_id(timeline)
    joined = [r for r in results if r.status == "ok" and lives[r.replica].asked_s > 0]
    assert joined and all(r.waited_s > 0 and dispatched_at(r) >= lives[r.replica].ready_s for r in joined)


def test_a_scale_up_window_adds_replicas_only_for_a_rise_that_lasts_it():
    sustained = Hpa(300.0, deque([(-15.0, 2)]), up_stabilization_s=60.0)
    assert [sustained.scale(5, 2, at) for at in (0.0, 15.0, 30.0, 45.0)] == [2, 2, 2, 2]
    assert sustained.scale(5, 2, 60.0) == 5  # five readings of 5 over the whole minute
    burst = Hpa(300.0, deque([(-15.0, 2)]), up_stabilization_s=60.0)
    assert [burst.scale(gauge, 2, at) for at, gauge in ((0.0, 9), (15.0, 2), (30.0, 9), (75.0, 2))] == [2, 2, 2, 2]


def spied_replay(startup_s: float) -> tuple[Replay, AutoscaledFleet, list[float], list[tuple[object, ...]]]:
    """An autoscaled replay of the one-slot fleet (1+1), with what its demand store was told
    (the virtual time of each request counted) and what was read from it (arguments, demand)."""
    config = autoscaled_config(one_slot_per_replica(), QUICK, {"standard": 1, "fast": 1})
    fleet = AutoscaledFleet(config, startup_s)
    replay = Replay(config, CLUSTER.profiles(), fleet=fleet)
    counted: list[float] = []
    reads: list[tuple[object, ...]] = []
    arrived, read = replay.demand.arrived, replay.demand.read

    def spy_arrived(model: str, task: str, prompt_tokens: int, horizon_s: float) -> None:
        counted.append(replay.now)
        arrived(model, task, prompt_tokens, horizon_s)

    def spy_read(model: str, windows_s: tuple[float, ...], horizon_s: float) -> list[dict[str, TaskDemand]]:
        windows = read(model, windows_s, horizon_s)
        reads.append((replay.now, model, tuple(windows_s), horizon_s, windows))
        return windows

    replay.demand.arrived, replay.demand.read = spy_arrived, spy_read  # type: ignore[method-assign]
    return replay, fleet, counted, reads


def test_a_request_that_waits_for_a_slot_counts_when_it_leaves_for_a_replica_not_when_it_arrived():
    """The gateway's count (its DemandKeeper): the burst of eight arrives at 1.5 s, two start at
    once, the others wait in line; no replica joins in time (start-up 1,000 s), so some start
    later and the rest are refused when extraction's 8-second deadline passes (429: counted
    then, as traffic the fleet should have served). Counting at arrival put all eight at 1.5 s."""
    replay, _, counted, _ = spied_replay(startup_s=1000.0)
    results = replay.run(BURST)
    served = sorted(dispatched_at(r) for r in results if r.status == "ok")
    refused = [r for r in results if r.status == "rejected"]
    assert served[:2] == [1.5, 1.5] and served[-1] > 1.5 and refused
    assert {r.refusal_status for r in refused} == {429}
    assert len(counted) == len(BURST) and Counter(served) <= Counter(counted)
    assert counted.count(1.5) == 2 and all(at >= 1.5 + 8.0 for at in counted if at not in served)


def test_the_autoscaler_reads_the_gateways_demand_store_and_keeps_no_meter_of_its_own():
    """Each reading of the gauge is ``model_need`` on what the replay's store held then, read with
    the model's two windows: the store the gateway's DemandKeeper fills, the only count there is."""
    replay, fleet, counted, reads = spied_replay(startup_s=0.5)
    replay.run(BURST)
    timeline = fleet.timeline(replay.now)
    assert counted and reads and [at for at, *_ in reads] == sorted({r.at_s for r in timeline.readings})
    config = autoscaled_config(one_slot_per_replica(), QUICK)
    (model,) = config.models.values()
    for at, name, windows_s, horizon_s, (short, long) in reads:
        assert (name, windows_s, horizon_s) == (model.name, (1.0, 3.0), 3.0)
        need = model_need(model, config.policy, None, (short, long))
        assert {r.variant: r.desired for r in timeline.readings if r.at_s == at} == {
            v: n.desired for v, n in need.variants.items()}
    assert not any(isinstance(value, DemandMeter) for value in vars(fleet).values())


def test_requests_no_replica_could_serve_ask_the_autoscaler_for_nothing():
    """Prompts longer than every variant's context are the client's mistake (400): the gateway
    does not count them, so a flood of them asks for no replica (counted at arrival, their
    million-token prompts asked for the most the HPA may add)."""
    flood = [Arrival(0.1 * i, "chat", 1_000_000, 50) for i in range(200)]
    scaling = Autoscaling(scrape_interval_s=5.0, rate_window_s=10.0, max_replicas=8)
    results, timeline = run_autoscaled(policy_config(CLUSTER, "duet"), CLUSTER.profiles(), flood,
                                       AutoscaledRun(scaling, {"standard": 1, "fast": 1}, startup_s=5.0))
    assert {(r.status, r.refusal_status) for r in results} == {("rejected", 400)}
    assert timeline.readings and all(r.desired <= 1 for r in timeline.readings)
    assert all(life.asked_s == 0.0 for life in timeline.lives)


def engined(index: int, engine: EngineConfig, ready_s: float) -> ReplicaLife:
    return ReplicaLife(dataclasses.replace(replica("standard", index), engine=engine), ready_s - 90.0, ready_s)


def test_a_shrinking_pd_split_variant_keeps_the_mix_wanted_at_the_new_count():
    """Kubernetes' order alone would keep the four replicas ready first: the two prefill-only ones
    and both large-budget decoders, leaving the variant no small-budget decoder."""
    lives = [engined(i, engine, 10.0 * i) for i, engine in enumerate(PD_SPLIT.engines("standard", 8, True))]
    joined = {life.replica.id for life in lives}
    wanted = PD_SPLIT.engines("standard", 4, True)
    assert Counter(life.replica.engine for life in removal_order(lives, joined)[4:]) != Counter(wanted)
    removed = shrink(lives, joined, 4, wanted)
    assert Counter(life.replica.engine for life in lives if life not in removed) == Counter(wanted)
    # within an engine, Kubernetes' order: of the four small-budget decoders the two ready last go
    assert [life.replica.id for life in removed] == ["m/standard/7", "m/standard/6", "m/standard/3", "m/standard/2"]


def test_without_roles_a_shrink_removes_in_kubernetes_order():
    lives = [engined(i, engine, 10.0 * i) for i, engine in enumerate(PD_SPLIT.engines("standard", 6, True))]
    joined = {life.replica.id for life in lives[:4]}
    assert shrink(lives, joined, 2) == removal_order(lives, joined)[:4]
    assert shrink(lives, joined, 6) == shrink(lives, joined, 7) == []


def test_a_loading_replica_of_a_surplus_engine_goes_first_and_one_of_a_wanted_engine_stays():
    prefill, large, small = PD_SPLIT.engines("standard", 6, True)[1:4]
    lives = [engined(0, prefill, 0.0), engined(1, large, 10.0), engined(2, large, 20.0),
             engined(3, large, 500.0), engined(4, small, 510.0)]  # 3 and 4 still loading
    joined = {"m/standard/0", "m/standard/1", "m/standard/2"}
    wanted = PD_SPLIT.engines("standard", 2, True)  # one prefill-only, one small-budget decoder
    assert [life.replica.id for life in shrink(lives, joined, 2, wanted)] == [
        "m/standard/3", "m/standard/2", "m/standard/1"]  # the loading large one, then the ready ones, last ready first
    # Kubernetes alone: both loading ones, then the most recently ready
    assert [life.replica.id for life in removal_order(lives, joined)[:3]] == ["m/standard/4", "m/standard/3", "m/standard/2"]


def test_an_autoscaled_variant_with_roles_grows_into_its_mix_and_keeps_it_as_it_shrinks():
    """The step's rise and fall through the run: each added replica takes the engine the mix
    lacks, and each shrink keeps as many of the wanted engines as the replicas before it held."""
    cluster = parse_cluster("h100-70b-w4a16:standard=2,fast=2")

    def mix(variant: str, count: int) -> list[EngineConfig]:
        return PD_SPLIT.engines(variant, count, True)

    schedule = step_arrivals()
    _, timeline = run_autoscaled(policy_config(cluster, "duet"), cluster.profiles(), schedule,
                                 AutoscaledRun(AUTOSCALING, {"standard": 2, "fast": 2}, startup_s=STARTUP_S, engines=mix))
    lives = list(timeline.lives)  # in the order asked for
    added = [k for k, life in enumerate(lives) if life.asked_s > 0]
    assert added
    for k in added:  # each beside the replicas of its variant asked before it and not removed
        life = lives[k]
        running = [other.replica.engine for other in lives[:k] if other.variant == life.variant
                   and (other.removed_s is None or other.removed_s > life.asked_s)]
        assert life.replica.engine == added_engine(mix(life.variant, len(running) + 1), running)
    shrinks = sorted({life.removed_s for life in timeline.lives if life.removed_s is not None})
    assert shrinks
    for at in shrinks:
        for variant in ("standard", "fast"):
            before = [life for life in timeline.lives if life.variant == variant and life.asked_s < at
                      and (life.removed_s is None or life.removed_s >= at)]
            after = [life for life in before if life.removed_s != at]
            wanted = Counter(mix(variant, len(after)))
            best = sum((Counter(life.replica.engine for life in before) & wanted).values())
            assert sum((Counter(life.replica.engine for life in after) & wanted).values()) == min(best, len(after))


def test_with_one_deployment_per_variant_a_shrink_is_blind_to_the_roles():
    """What ``duet deploy render`` deploys today: the mix holds on the way up only, and each
    shrink removes the replicas Kubernetes ranks first, whatever their engines."""
    cluster = parse_cluster("h100-70b-w4a16:standard=2,fast=2")
    run = AutoscaledRun(AUTOSCALING, {"standard": 2, "fast": 2}, startup_s=STARTUP_S,
                        engines=lambda variant, count: PD_SPLIT.engines(variant, count, True), deployment_per_variant=True)
    _, timeline = run_autoscaled(policy_config(cluster, "duet"), cluster.profiles(), step_arrivals(), run)
    shrinks = sorted({life.removed_s for life in timeline.lives if life.removed_s is not None})
    assert shrinks
    for at in shrinks:
        for variant in ("standard", "fast"):
            before = [life for life in timeline.lives if life.variant == variant and life.asked_s < at
                      and (life.removed_s is None or life.removed_s >= at)]
            removed = [life for life in before if life.removed_s == at]
            joined = {life.replica.id for life in before if life.ready_s <= at}
            ranked = removal_order(before, joined)[:len(removed)]
            assert {life.replica.id for life in removed} == {life.replica.id for life in ranked}


def test_a_variant_of_engine_groups_holds_their_deployed_split_at_every_moment_of_a_run():
    """The plan's groups at its count (standard: 2 prefill-only, 1 large-budget and 3 small-budget
    decoders; fast: 8,192 and 2,048), split as the gauge's per-group series splits them: from the
    start (two replicas each, re-engined to the split at two) through the step's rise and fall,
    each variant's replicas asked for and not removed are exactly the split at their count, what
    one autoscaler per group Deployment would hold."""
    cluster = parse_cluster("h100-70b-w4a16:standard=2,fast=2")
    groups = {"standard": groups_of(PD_SPLIT.engines("standard", 6, True)),
              "fast": groups_of(PD_SPLIT.engines("fast", 2, True))}
    wanted = by_groups(groups)
    _, timeline = run_autoscaled(policy_config(cluster, "duet"), cluster.profiles(), step_arrivals(),
                                 AutoscaledRun(AUTOSCALING, {"standard": 2, "fast": 2}, startup_s=STARTUP_S, engines=wanted))
    moments = sorted({0.0, *(life.asked_s for life in timeline.lives),
                      *(life.removed_s for life in timeline.lives if life.removed_s is not None)})
    counts = set()
    for at in moments:
        for variant in ("standard", "fast"):
            held = [life.replica.engine for life in timeline.lives if life.variant == variant and life.asked_s <= at
                    and (life.removed_s is None or life.removed_s > at)]
            assert Counter(held) == Counter(wanted(variant, len(held))), (at, variant)
            counts.add((variant, len(held)))
    # standard only keeps its floor at this traffic (one: the largest group that answers alone, the
    # 2,048 one), fast grows and shrinks through the split
    assert {n for variant, n in counts if variant == "standard"} == {1, 2}
    assert {n for variant, n in counts if variant == "fast"} >= {1, 2, 3, 4}


def test_one_hpa_per_group_on_the_groups_series_sets_the_split_of_what_the_variants_hpa_sets():
    """The replay scales a variant with one HPA and splits its count; the cluster runs an HPA per
    group Deployment on the group's series (the split of the gauge). Both windows take a max or
    a min of readings, and the split never lowers a group as the count grows, so the two agree
    at every reading (the HPA's 10% tolerance and its floor of one aside)."""
    shares = [GroupShare(2, EngineRole.PREFILL), GroupShare(1, EngineRole.BOTH), GroupShare(3, EngineRole.BOTH)]
    draw = random.Random(7)
    for _ in range(50):
        up_s, down_s = draw.choice((0.0, 60.0, 300.0)), draw.choice((0.0, 120.0, 300.0))
        variant = Hpa(down_s, deque([(0.0, 6)]), up_s)
        groups = [Hpa(down_s, deque([(0.0, n)]), up_s) for n in split_replicas(shares, 6)]
        current, per_group = 6, list(split_replicas(shares, 6))
        for tick in range(1, 80):
            gauge = draw.randint(1, 16)
            current = variant.scale(gauge, current, 15.0 * tick)
            per_group = [hpa.scale(n, held, 15.0 * tick)
                         for hpa, n, held in zip(groups, split_replicas(shares, gauge), per_group, strict=True)]
            assert tuple(per_group) == split_replicas(shares, current), (tick, gauge)


def test_a_schedule_floor_raises_the_gauge_at_its_time_of_day_on_the_replays_clock_and_the_hpa_follows():
    from gateway.scaling import FloorSchedule, ScheduleStep

    # Quiet traffic (0.5/s, which asks for one fast replica); the schedule asks for 4 fast from 200 s.
    rng, at, schedule = random.Random(1), 0.0, []
    while (at := at + rng.expovariate(0.5)) < 600.0:
        schedule.append(Arrival(at, "chat", 2000, 100))
    floor = {"fast": FloorSchedule((ScheduleStep(0.0, 0), ScheduleStep(200.0, 4)))}
    settings = dataclasses.replace(AUTOSCALING, schedule_by_variant=MappingProxyType(floor), scale_up_stabilization_s=30.0)
    _, timeline = run_autoscaled(policy_config(CLUSTER, "duet"), CLUSTER.profiles(), schedule,
                                 AutoscaledRun(settings, {"standard": 1, "fast": 1}, startup_s=STARTUP_S))
    fast = [r for r in timeline.readings if r.variant == "fast"]
    assert all(r.desired < 4 for r in fast if r.at_s < 200.0)
    assert all(r.desired >= 4 for r in fast if r.at_s >= 200.0)
    # The HPA sees the floor as any reading: up once its scale-up window holds nothing lower.
    assert min(r.at_s for r in fast if r.scaled_to >= 4) == min(r.at_s for r in fast if r.at_s >= 230.0)


def test_a_scale_up_policy_adds_at_most_its_pods_above_the_count_a_period_ago():
    hpa = Hpa(300.0, deque([(-15.0, 2)]), up_policy=(2, 60.0))
    counts, current = [], 2
    for at in (0.0, 15.0, 45.0, 60.0, 75.0, 120.0, 135.0):
        current = hpa.scale(9, current, at)
        counts.append(current)
    # 2 -> 4 at once; then no more until the rise at 0 s leaves the period; 6 at 60 s, 8 at 120 s.
    assert counts == [4, 4, 4, 6, 6, 8, 8]
    assert Hpa(300.0, deque([(-15.0, 2)])).scale(9, 2, 0.0) == 9  # no policy: at once to the gauge
