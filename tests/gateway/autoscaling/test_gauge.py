"""The desired-replicas gauges: computed at the scrape from the demand store on an injected
clock, they follow a rate step within one scrape interval and a lull only after the rate
window, never go under the parity floor, follow the active config, keep the last demand while
the shared store is away, and do not exist for a config without autoscaling; a variant of
several engine groups gets its count split over them in a series per group."""

from __future__ import annotations

import asyncio
import copy
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from gateway.autoscaling.gauge import FleetSignal, model_need, sizing_for
from gateway.config import parse_config
from gateway.config.types import DuetConfig
from gateway.scaling import TaskDemand, split_replicas
from gateway.state.demand import InMemoryDemand
from gateway.state.lengths import NO_ESTIMATES, LengthEstimates
from gateway.state.redis.link import StoreUnavailable
from gateway.telemetry import Telemetry

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
# The demo's fast variant serves agent and extraction only: standard is the only home of chat,
# coding, long-context and reasoning, so parity keeps it at one replica at least.


def config(autoscaling: dict[str, Any] | None = None) -> DuetConfig:
    raw = copy.deepcopy(DEMO)
    if autoscaling is not None:
        raw["models"]["smollm2"]["autoscaling"] = autoscaling
    return parse_config(yaml.safe_dump(raw))


SCALED = config({"scrape_interval_s": 15, "rate_window_s": 120})


class Clock:
    def __init__(self) -> None:
        self.at = 10_000.0

    def __call__(self) -> float:
        return self.at


class Rig:
    def __init__(self, active: DuetConfig = SCALED) -> None:
        self.clock = Clock()
        self.active = active
        self.demand = InMemoryDemand(self.clock)
        self.telemetry = Telemetry()
        self.fleet = FleetSignal(lambda: self.active, self.demand, lambda: NO_ESTIMATES, self.clock)
        self.telemetry.watch_fleet(self.fleet.variant_needs)

    def traffic(self, task: str, rate_per_s: float, seconds: float) -> None:
        """``rate_per_s`` requests of ``task`` (200-token prompts) for ``seconds``, on the clock."""
        end = self.clock.at + seconds
        while self.clock.at < end:
            self.demand.arrived("smollm2", task, 200, 120.0)
            self.clock.at += 1.0 / rate_per_s

    def scrape(self) -> dict[tuple[str, str], float]:
        """The gauges a scrape reads now: (metric, variant) -> value."""
        asyncio.run(self.fleet.refresh())
        text = self.telemetry.render().decode()
        return {(name, variant): float(value) for name, variant, value in re.findall(
            r'^(duet_desired_replicas|duet_demand_busy_replicas)\{model="smollm2",variant="(\w+)"\} (\S+)$', text, re.M)}


def steady_desired(rate_per_s: float) -> int:
    """What a steady ``rate_per_s`` of chat asks of the standard variant."""
    chat = {"chat": TaskDemand(rate_per_s, 200.0)}
    return model_need(SCALED.models["smollm2"], SCALED.policy, NO_ESTIMATES, (chat, chat)).variants["standard"].desired


def test_a_rate_step_shows_within_one_scrape_interval_and_a_lull_only_after_the_rate_window() -> None:
    rig = Rig()
    low, high = steady_desired(0.1), steady_desired(0.5)
    assert low < high
    rig.traffic("chat", 0.1, 300.0)
    assert rig.scrape()[("duet_desired_replicas", "standard")] == low
    rig.traffic("chat", 0.5, 15.0)  # the step: one scrape interval later it shows in full
    assert rig.scrape()[("duet_desired_replicas", "standard")] == high
    rig.traffic("chat", 0.5, 105.0)
    assert rig.scrape()[("duet_desired_replicas", "standard")] == high
    rig.traffic("chat", 0.1, 60.0)  # the lull: the long window still holds the burst
    assert rig.scrape()[("duet_desired_replicas", "standard")] > low
    rig.traffic("chat", 0.1, 75.0)  # the burst has left the rate window
    assert rig.scrape()[("duet_desired_replicas", "standard")] == low


def test_with_no_traffic_the_only_home_of_a_task_keeps_its_parity_floor() -> None:
    gauges = Rig().scrape()
    assert gauges[("duet_desired_replicas", "standard")] == 1  # the only home of chat, coding, ...
    assert gauges[("duet_desired_replicas", "fast")] == 0  # agent and extraction have the standard too
    assert gauges[("duet_demand_busy_replicas", "standard")] == 0


def test_a_schedule_floors_the_gauge_by_the_clocks_time_of_day_in_utc() -> None:
    scheduled = config({"schedule_by_variant": {"fast": [{"at": "00:00", "replicas": 0}, {"at": "02:00", "replicas": 3},
                                                          {"at": "04:00", "replicas": 0}]}})
    rig = Rig(scheduled)  # the clock starts at 10,000 s: 02:46:40 UTC on the first day
    assert rig.scrape()[("duet_desired_replicas", "fast")] == 3  # no demand: the schedule alone
    rig.clock.at += 86400.0  # the same time a day later
    assert rig.scrape()[("duet_desired_replicas", "fast")] == 3
    rig.clock.at += 5000.0  # 04:10
    assert rig.scrape()[("duet_desired_replicas", "fast")] == 0


def test_busy_replicas_explain_the_desired_count() -> None:
    rig = Rig()
    rig.traffic("chat", 0.5, 120.0)
    gauges = rig.scrape()
    busy = gauges[("duet_demand_busy_replicas", "standard")]
    utilisation = 0.7  # the default: the rest is headroom
    assert busy > 1 and gauges[("duet_desired_replicas", "standard")] == math.ceil(busy / utilisation)


def test_a_config_without_autoscaling_exports_no_such_series() -> None:
    rig = Rig(config())
    rig.traffic("chat", 0.5, 30.0)
    assert rig.scrape() == {}
    assert b"duet_desired_replicas" not in rig.telemetry.render()


def test_the_gauges_follow_the_active_config() -> None:
    rig = Rig(config())
    assert rig.scrape() == {}
    rig.active = config({"scrape_interval_s": 15, "rate_window_s": 120, "min_replicas": {"fast": 2}})  # a reload
    assert rig.scrape()[("duet_desired_replicas", "fast")] == 2
    rig.active = config()  # autoscaling taken off again
    assert rig.scrape() == {}


def test_sizing_reads_the_learned_answer_length_before_the_configured_one() -> None:
    class Learned:
        def expected(self, model: str, task: str) -> int | None:
            return 40 if task == "chat" else None

    learned: LengthEstimates = Learned()
    sizing = sizing_for(SCALED.policy, "smollm2", learned)
    assert sizing["chat"].expected_output_tokens == 40
    assert sizing["coding"].expected_output_tokens == SCALED.policy.tasks["coding"].expected_output_tokens


class Flaky:
    """A shared demand store that answers once, then cannot."""

    def __init__(self, demand: dict[str, TaskDemand]) -> None:
        self.reads = 0
        self.answer = demand

    def arrived(self, model: str, task: str, prompt_tokens: int, horizon_s: float) -> None: ...

    def answered(self, model: str, task: str, output_tokens: int, horizon_s: float) -> None: ...

    async def demand(self, model: str, windows_s: Sequence[float], horizon_s: float) -> list[dict[str, TaskDemand]]:
        self.reads += 1
        if self.reads > 1:
            raise StoreUnavailable("redis is down (backing off)")
        return [self.answer for _ in windows_s]


def test_while_the_shared_store_is_away_the_last_demand_is_kept_and_said_stale() -> None:
    fleet = FleetSignal(lambda: SCALED, Flaky({"chat": TaskDemand(0.5, 200.0)}), lambda: NO_ESTIMATES)
    first = asyncio.run(fleet.refresh())["smollm2"]
    second = asyncio.run(fleet.refresh())["smollm2"]
    assert first.fresh and not second.fresh
    assert second.variants["standard"].desired == first.variants["standard"].desired == steady_desired(0.5)
    assert second.to_json()["demand"]["chat"]["sized"]["rate_per_s"] == 0.5


def grouped(autoscaling: dict[str, Any]) -> DuetConfig:
    """The demo with its standard variant as engine groups (one prefill-only replica, two both
    at a 1,024-token chunk budget, through NIXL), found group by group as the Kubernetes render
    writes it, and the engine-role filter P/D replicas need."""
    raw = copy.deepcopy(DEMO)
    model = raw["models"]["smollm2"]
    model["autoscaling"] = autoscaling
    standard = model["variants"]["standard"]
    del standard["replicas"]
    standard["engine_groups"] = [{"count": 1, "engine": {"role": "prefill", "kv_connector": "NixlConnector"}},
                                 {"count": 2, "engine": {"kv_connector": "NixlConnector", "max_num_batched_tokens": 1024}}]
    standard["discovery"] = {"kubernetes": {"label_selector": "duet.dev/model=smollm2,duet.dev/variant=standard"}}
    raw["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})
    for profile in raw["routing"]["profiles"].values():
        profile["filters"].append("engine-role")
    return parse_config(yaml.safe_dump(raw))


GROUPED = grouped({"scrape_interval_s": 15, "rate_window_s": 120})
GROUPS = ("prefill-nixl", "both-nixl-c1024")


def group_series(rig: Rig) -> dict[tuple[str, str], float]:
    """duet_desired_group_replicas as the last scrape rendered it: (variant, group) -> value."""
    found = {}
    for labels, value in re.findall(r'^duet_desired_group_replicas\{(.*)\} (\S+)$', rig.telemetry.render().decode(), re.M):
        label = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        assert set(label) == {"model", "variant", "group"} and label["model"] == "smollm2"
        found[(label["variant"], label["group"])] = float(value)
    return found


def test_a_variant_of_engine_groups_gets_its_count_split_over_them_in_a_series_of_their_own() -> None:
    rig = Rig(GROUPED)
    shares = [share for _, share in GROUPED.models["smollm2"].engine_groups["standard"]]
    seen = set()
    for rate in (0.0, 0.3, 0.6, 1.2):
        if rate:
            rig.traffic("chat", rate, 120.0)
        desired = rig.scrape()[("duet_desired_replicas", "standard")]
        groups = group_series(rig)
        assert set(groups) == {("standard", group) for group in GROUPS}  # fast runs one engine: none
        counts = tuple(groups[("standard", group)] for group in GROUPS)
        assert counts == split_replicas(shares, int(desired)) and sum(counts) == desired
        seen.add(counts)
    assert (0, 1) in seen and len(seen) >= 3  # the floor's one replica decodes; the rest split as configured
    # the variants' metric keeps one label set: no group label on it
    assert "group=" not in "".join(line for line in rig.telemetry.render().decode().splitlines()
                                   if line.startswith("duet_desired_replicas{"))


def test_every_gateway_sharing_the_demand_reports_the_same_group_counts() -> None:
    one, two = Rig(GROUPED), Rig(GROUPED)
    two.demand = one.demand
    two.fleet = FleetSignal(lambda: GROUPED, one.demand, lambda: NO_ESTIMATES)
    two.telemetry = Telemetry()
    two.telemetry.watch_fleet(two.fleet.variant_needs)
    one.traffic("chat", 0.8, 120.0)
    two.clock.at = one.clock.at
    one.scrape(), two.scrape()
    assert group_series(one) == group_series(two) and sum(group_series(one).values()) > 1


def test_the_admin_view_says_each_groups_count() -> None:
    fleet = FleetSignal(lambda: GROUPED, Flaky({"chat": TaskDemand(0.8, 200.0)}), lambda: NO_ESTIMATES)
    need = asyncio.run(fleet.refresh())["smollm2"]
    (standard,) = [v for v in need.to_json()["variants"] if v["variant"] == "standard"]
    assert sum(standard["groups"].values()) == standard["desired"] > 1
    assert list(standard["groups"]) == list(GROUPS)
    assert "groups" not in next(v for v in need.to_json()["variants"] if v["variant"] == "fast")
