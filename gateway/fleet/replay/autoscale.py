"""An autoscaled fleet in the replay (issue #27): the gateway's own sizing, the number behind
``duet_desired_replicas{model, variant}`` (``model_need`` on the gateway's demand store, through
``gateway.flow``), read every ``autoscaling.scrape_interval_s`` of virtual time, and a
Kubernetes HPA per variant Deployment acting on it.

- **Demand.** The gateway's own count, not a second one: the replay subscribes the gateway's
  ``DemandKeeper`` to its director's hooks, writing into an ``InMemoryDemand`` on the replay's
  clock, and the fleet reads that store. So a request counts once, when it leaves for its first
  replica (one that waited for a slot counts when it got one) or when the fleet refused it
  (429, 5xx; a client's 400 does not count), and an answer's length when it ended well
  (``gateway.autoscaling.demand_keeper``). Per task the gauge reads the higher of the rates over
  ``scrape_interval_s`` and ``rate_window_s`` (a burst shows at the next reading, a lull only
  once the longer window has passed). The replay's clock is the time of day (0: midnight UTC)
  a variant's schedule floor reads (``autoscaling.schedule_by_variant``), as the gateway's gauge
  reads its wall clock.
- **HPA.** Up to the lowest gauge of the last ``scale_up_stabilization_s`` when that is above the
  replicas asked for (0, the HPA's default: at once to the gauge); on the way down
  the highest gauge of the last ``scale_down_stabilization_s`` (``stabilizationWindowSeconds``).
  The gauge is already clamped to [floor, ``max_replicas``]. The run's initial fleet counts as
  a reading at its start, so a warm fleet is not cut before one stabilisation window. With
  ``scale_up_pods`` set, a rise is capped as the HPA's ``behavior.scaleUp.policies`` (one
  ``Pods`` policy) caps it: at most that many replicas above the count of ``scale_up_period_s``
  ago (the count now less every change made since). Unset, no cap (the HPA's own default, 4 pods
  or 100% per 15 s, is not modelled: a rendered HPA with no policy may rise slower than this).
- **Up.** An asked-for replica is paid for at once (its pod holds its GPUs while vLLM loads) and
  joins routing ``startup_s`` later (``STARTUP_S`` by default).
- **Down.** Kubernetes' ReplicaSet controller picks which pods go when a Deployment shrinks
  (``ActivePodsWithRanks``): pods not ready before ready ones, then the most recently ready. So
  here: a replica still loading goes first (it leaves at once, with nothing to drain), then the
  ready replica that became ready last; among equals the one asked for last. With engine roles
  the replicas kept carry the mix wanted at the new count as nearly as they can: replicas of a
  surplus engine go first, in that order among them (``shrink``; ``engine_mix``: the mix is the
  deployed split of the variant's engine groups, which one Deployment per group, each on its own
  autoscaler, holds; with ``deployment_per_variant`` shrinks stay blind to roles, as one
  Deployment per variant would be). A withdrawn
  replica takes no new request at once and leaves when its running and queued requests have
  ended (the pod's grace period is assumed to cover the drain). Requests waiting in the
  gateway's waiting room stay in line and are planned again on the replicas left at their next
  wake; when a replica joins, the whole line re-plans at once.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.autoscaling import Autoscaling, InMemoryDemand, model_need
from gateway.fleet.replay.engine_mix import WantedEngines, added_engine, removal_by_mix
from gateway.fleet.replay.fleet import FleetChange, FleetTimeline, GaugeReading, ReplicaLife, initial_lives
from gateway.fleet.replay.request_result import RequestResult
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.workload.traces import Arrival
from gateway.flow import DuetConfig, EngineConfig, ModelSpec, Replica
from serving.sim.profile import Profile

# How long a new 70B replica on 4 H100s takes from being asked for to serving: 346 s. Measured by
# Anyscale for Ray Serve LLM's replica start-up (github.com/anyscale/ray-serve-llm-perf-examples,
# replica_initialization/, llama-3-70b "baseline": Meta-Llama-3-70B, vLLM V1, TP=4 on a p5.48xlarge
# with 8x H100, log of 2025-10-15): from the replica's process start (11:52:39) to the server
# ready (11:58:25), of which 196 s downloading the weights from the Hugging Face hub, 16 s loading
# them, 61 s torch.compile and 16 s CUDA-graph capture. Its "all" run (weights streamed from S3,
# sharded, with a torch.compile cache) took 109 s; llm-d's Workload Variant Autoscaler puts a new
# vLLM pod at 2-8+ minutes to Ready (llm-d/llm-d-autoscaling#1071, 2026-04-29), node
# provisioning and image pull included, which the Ray figure leaves out.
STARTUP_S = 346.0


@dataclass(slots=True)
class Hpa:
    """One variant Deployment's HPA on the gauge (its behaviour: the module docstring's).
    ``history``: the readings of the stabilisation window, oldest first."""

    stabilization_s: float
    history: deque[tuple[float, int]]
    up_stabilization_s: float = 0.0
    # (pods, period_s): at most ``pods`` above the count of ``period_s`` ago; None: no cap.
    up_policy: tuple[int, float] | None = None
    changes: deque[tuple[float, int]] = dataclasses.field(default_factory=deque)  # (when, replicas added or removed)

    def scale(self, gauge: int, current: int, now: float) -> int:
        """The replica count to set, from the gauge's reading and the replicas asked for now:
        up to the lowest reading of the scale-up window when that is above the count (capped by
        ``up_policy``), else down to the highest reading of the scale-down window (never up on
        that path)."""
        self.history.append((now, gauge))
        while self.history[0][0] < now - max(self.stabilization_s, self.up_stabilization_s):
            self.history.popleft()
        up = min(reading for at, reading in self.history if at >= now - self.up_stabilization_s)
        if up > current:
            target = up if self.up_policy is None else min(up, max(current, self._period_start(current, now)
                                                                   + self.up_policy[0]))
        else:
            target = min(current, max(reading for at, reading in self.history if at >= now - self.stabilization_s))
        if target != current and self.up_policy is not None:
            self.changes.append((now, target - current))
        return target

    def _period_start(self, current: int, now: float) -> int:
        """The count at the start of the policy's period: now's less every change made since
        (Kubernetes' ``periodStartReplicas``)."""
        assert self.up_policy is not None
        while self.changes and self.changes[0][0] <= now - self.up_policy[1]:
            self.changes.popleft()
        return current - sum(change for _, change in self.changes)


class AutoscaledFleet:
    """The ``FleetControl`` of an autoscaled replay: the config's replicas to start with (ready at
    ``started_s``), then the gauge on the replay's demand and the HPA each
    ``autoscaling.scrape_interval_s``. The config's model must have an ``autoscaling``."""

    def __init__(self, config: DuetConfig, startup_s: float = STARTUP_S, started_s: float = 0.0,
                 engines: WantedEngines | None = None, deployment_per_variant: bool = False) -> None:
        (model,) = config.models.values()
        if model.autoscaling is None:
            raise ValueError(f"models.{model.name}.autoscaling: an autoscaled replay needs one")
        if startup_s < 0:
            raise ValueError(f"startup_s {startup_s}: >= 0")
        self._model, self._autoscaling, self._startup_s = model, model.autoscaling, startup_s
        self._policy = config.policy
        self._engines = engines
        self._deployment_per_variant = deployment_per_variant  # see AutoscaledRun
        self._lives = initial_lives(model.replicas, started_s)  # every replica, in the order asked for
        self._joined = {life.replica.id for life in self._lives}
        self._loading: list[ReplicaLife] = []  # asked for, not ready, not removed
        self._indices = {v: itertools.count(sum(r.variant == v for r in model.replicas)) for v in model.variants}
        self._hpas = {v: Hpa(self._autoscaling.scale_down_stabilization_s,
                              deque([(started_s, sum(r.variant == v for r in model.replicas))]),
                              self._autoscaling.scale_up_stabilization_s, self._autoscaling.scale_up_policy)
                      for v in model.variants}
        self._next_tick = started_s + self._autoscaling.scrape_interval_s
        self._readings: list[GaugeReading] = []

    def next_change_s(self) -> float:
        # Asked for every event of the run: the few replicas loading, not every one there was.
        return min(self._next_tick, min((life.ready_s for life in self._loading), default=math.inf))

    def change(self, now: float, demand: InMemoryDemand) -> FleetChange:
        joined = [life for life in self._loading if life.ready_s <= now]
        self._loading = [life for life in self._loading if life.ready_s > now]
        self._joined.update(life.replica.id for life in joined)
        withdrawn: list[str] = []
        if now >= self._next_tick:
            withdrawn = self._tick(now, demand)
            self._next_tick = now + self._autoscaling.scrape_interval_s
        return FleetChange(tuple(life.replica for life in joined), tuple(withdrawn))

    def drained(self, replica_id: str, at: float) -> None:
        life = next(life for life in self._lives if life.replica.id == replica_id)
        life.left_s = at

    def timeline(self, end_s: float) -> FleetTimeline:
        lives = tuple(dataclasses.replace(life) for life in self._lives)
        return FleetTimeline(lives, end_s, tuple(self._readings))

    def _tick(self, now: float, demand: InMemoryDemand) -> list[str]:
        """Read the gauge, let each variant's HPA act on it; the withdrawn ready replicas' ids."""
        autoscaling = self._autoscaling
        short, long = demand.read(self._model.name, (autoscaling.scrape_interval_s, autoscaling.rate_window_s),
                                  autoscaling.rate_window_s)
        withdrawn: list[str] = []
        for variant, need in model_need(self._model, self._policy, None, (short, long), now).variants.items():
            asked = [life for life in self._lives if life.variant == variant and life.removed_s is None]
            target = self._hpas[variant].scale(need.desired, len(asked), now)
            self._readings.append(GaugeReading(now, variant, need.desired, target))
            for _ in range(target - len(asked)):
                life = ReplicaLife(self._replica(variant, [a.replica.engine for a in asked]), now, now + self._startup_s)
                asked.append(life)
                self._lives.append(life)
                self._loading.append(life)
            wanted = None if self._engines is None or self._deployment_per_variant else self._engines(variant, target)
            for life in shrink(asked, self._joined, target, wanted):
                life.removed_s = now
                if life.replica.id in self._joined:
                    withdrawn.append(life.replica.id)
                else:  # still loading: nothing to drain
                    life.left_s = now
                    self._loading.remove(life)
        return withdrawn

    def _replica(self, variant: str, running: Sequence[EngineConfig]) -> Replica:
        """A new replica, named as the config names them (never reusing a name), its engine the one
        the run's mix at the new count lacks beside the variant's ``running`` ones (no mix: the
        launch profile's)."""
        index = next(self._indices[variant])
        name = self._model.name
        engine = (EngineConfig() if self._engines is None
                  else added_engine(self._engines(variant, len(running) + 1), running))
        return Replica(f"{name}/{variant}/{index}", name, variant, f"http://replay.invalid/{variant}/{index}", engine)


def removal_order(lives: Sequence[ReplicaLife], joined: set[str]) -> list[ReplicaLife]:
    """Which replicas a shrinking Deployment removes first (Kubernetes' ranking): those still
    loading, then the ready ones, the most recently ready first; among equals the one asked for
    last (``lives`` is in the order they were asked for)."""
    order = sorted(enumerate(lives), key=lambda pair: (pair[1].replica.id in joined, -pair[1].ready_s, -pair[0]))
    return [life for _, life in order]


def shrink(lives: Sequence[ReplicaLife], joined: set[str], target: int,
           wanted: Sequence[EngineConfig] | None = None) -> list[ReplicaLife]:
    """The replicas a variant's ``lives`` (asked for, in that order) lose when it shrinks to
    ``target`` (none when it does not shrink), in ``removal_order``; with ``wanted``, the engines
    its roles want at ``target``, replicas of a surplus engine go first, in that order among them
    (``engine_mix.removal_by_mix``), so a ready replica of a wanted engine outlives a loading
    one of a surplus engine."""
    if len(lives) <= target:
        return []
    order = removal_order(lives, joined)
    if wanted is not None:
        order = [order[i] for i in removal_by_mix([life.replica.engine for life in order], wanted)]
    return order[:len(lives) - target]


def autoscaled_config(config: DuetConfig, autoscaling: Autoscaling, initial_counts: Mapping[str, int] | None = None,
                      engines: WantedEngines | None = None) -> DuetConfig:
    """``config`` with ``autoscaling`` on its model, and ``initial_counts`` replicas per variant
    (named as the config names them) instead of its own when given; with ``engines``, each
    variant's replicas on the engines wanted at their count (as the groups' autoscalers would
    hold them), in order."""
    (model,) = config.models.values()
    replicas = model.replicas
    if initial_counts is not None:
        unknown = sorted(set(initial_counts) - set(model.variants))
        if unknown:
            raise ValueError(f"initial_counts: unknown variant(s) {', '.join(unknown)} (known: {', '.join(model.variants)})")
        replicas = tuple(Replica(f"{model.name}/{v}/{i}", model.name, v, f"http://replay.invalid/{v}/{i}")
                         for v in model.variants for i in range(initial_counts.get(v, 0)))
    if engines is not None:
        replicas = _engined(replicas, engines)
    scaled: ModelSpec = dataclasses.replace(model, replicas=replicas, autoscaling=autoscaling)
    return dataclasses.replace(config, models={model.name: scaled})


def _engined(replicas: Sequence[Replica], engines: WantedEngines) -> tuple[Replica, ...]:
    """``replicas`` with each variant's on ``engines`` at its count, in the replicas' order."""
    wanted = {v: list(engines(v, sum(r.variant == v for r in replicas))) for v in {r.variant for r in replicas}}
    return tuple(dataclasses.replace(r, engine=wanted[r.variant].pop(0)) for r in replicas)


@dataclass(frozen=True, slots=True)
class AutoscaledRun:
    """The autoscaled fleet a replay runs on: how the gauge and an HPA scale it
    (``autoscaling``), what it starts from (``initial_counts`` replicas per variant; default:
    the config's), how long an asked-for replica takes to join routing (``startup_s``) and until
    when its timeline is billed (``until_s``; default: the later of the last arrival and the
    end of the run)."""

    autoscaling: Autoscaling
    initial_counts: Mapping[str, int] | None = None
    startup_s: float = STARTUP_S
    until_s: float | None = None
    # The engines a variant's replicas should carry at a count (``engine_mix.by_groups``: the
    # deployed split of its engine groups): the run starts on them, an added replica starts with
    # one the mix lacks, a shrink removes surplus engines first (``engine_mix``). None: every
    # replica on the config's engine, removed in Kubernetes' order.
    engines: WantedEngines | None = None
    # True: each variant is one Deployment, so a shrink removes in Kubernetes' order, blind to
    # ``engines``, which then hold only on the way up; kept to measure what per-group Deployments
    # buy. False: one Deployment per engine group, each on its autoscaler (what ``duet deploy
    # render`` writes).
    deployment_per_variant: bool = False


def run_autoscaled(config: DuetConfig, profiles: Mapping[str, Profile], arrivals: Sequence[Arrival],
                   run: AutoscaledRun, settings: ReplaySettings | None = None) -> tuple[list[RequestResult], FleetTimeline]:
    """Replays ``arrivals`` through ``config``'s policy on the fleet ``run`` describes, scaled
    by the gauge and an HPA; ``settings`` as ``Replay`` takes them (its ``scrape_interval_s``
    is how often the gateway reads its replicas' metrics; the gauge's own interval is
    ``autoscaling.scrape_interval_s``)."""
    scaled = autoscaled_config(config, run.autoscaling, run.initial_counts, run.engines)
    fleet = AutoscaledFleet(scaled, run.startup_s, engines=run.engines,
                            deployment_per_variant=run.deployment_per_variant)
    replay = Replay(scaled, profiles, settings, fleet=fleet)
    results = replay.run(arrivals)
    end_s = run.until_s if run.until_s is not None else max(replay.now, arrivals[-1].at_s if arrivals else 0.0)
    return results, fleet.timeline(end_s)
