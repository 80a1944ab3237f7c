"""What a replay runs: a replica set with counts per variant, a policy as a Duet config, and the
trace's arrivals."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml

from gateway.flow import DuetConfig, parse_config
from loadtests.policies import REPLICA_SETS, ReplicaSet, duet_config
from loadtests.traces import Arrival, replay_arrivals, task_traces
from serving.sim.profile import Profile, load_profile


@dataclass(frozen=True, slots=True)
class Cluster:
    """A replica set and how many replicas each variant has."""

    replica_set: ReplicaSet
    counts: dict[str, int]

    @property
    def with_counts(self) -> ReplicaSet:
        """The replica set with these counts, for benchmarks that start the replicas."""
        variants = tuple(replace(v, replicas=self.counts[v.name]) for v in self.replica_set.variants)
        return replace(self.replica_set, variants=variants)

    @property
    def urls(self) -> dict[str, list[str]]:
        # Never dialled: replay routes to engines in memory; the URLs only name the replicas.
        return {v: [f"http://replay.invalid/{v}/{i}" for i in range(n)] for v, n in self.counts.items()}

    def profiles(self) -> dict[str, Profile]:
        return {v.name: load_profile(v.profile) for v in self.replica_set.variants}

    @property
    def parity(self) -> dict[str, frozenset[str] | None]:
        """variant -> the task types parity allows on it (None: all): what every policy is scored by."""
        return {v.name: None if v.allowed_tasks is None else frozenset(v.allowed_tasks) for v in self.replica_set.variants}


def parse_cluster(spec: str) -> Cluster:
    """``h100-70b`` (one replica per variant) or ``h100-70b:standard=1,fast=3``."""
    name, _, counts_text = spec.partition(":")
    if name not in REPLICA_SETS:
        raise ValueError(f"unknown replica set '{name}' (known: {', '.join(sorted(REPLICA_SETS))})")
    replica_set = REPLICA_SETS[name]
    counts = {v.name: v.replicas for v in replica_set.variants}
    for item in filter(None, counts_text.split(",")):
        variant, _, count = item.partition("=")
        if variant not in counts or not count.isdigit():
            raise ValueError(f"bad replica count '{item}' (variants: {', '.join(counts)})")
        counts[variant] = int(count)
    return Cluster(replica_set, counts)


# Speed prior fields that are times (the variant is slower when they grow); prefill is a rate.
_DECODE_TIMES = ("decode_s_per_token", "step_s_per_seq", "kv_read_s_per_token", "frontend_s", "draft_s_per_step",
                 "draft_s_per_seq")


@dataclass(frozen=True, slots=True)
class PriorError:
    """How wrong the router's speed priors are, per variant: its prefill rate is divided and its
    decode step times multiplied by their factor (1.3: the variant looks 30% slower than it is)."""

    factors: Mapping[str, tuple[float, float]]  # variant -> (prefill, decode)

    @classmethod
    def draw(cls, variants: Sequence[str], error: float, seed: int) -> PriorError:
        """Each variant off by ``error``, slower or faster (prefill and decode alike: a calibration
        on the wrong machine is off in one direction). Consecutive seeds go through every
        combination of directions, in a fixed shuffled order, so that a few seeds hold variants
        erring apart (their relative speed wrong: what choosing between them turns on) as well as
        together; a coin per variant had all of seeds 0-4 err together for standard and fast."""
        combinations = list(itertools.product((-1, 1), repeat=len(variants)))
        random.Random("prior-error").shuffle(combinations)
        signs = dict(zip(variants, combinations[seed % len(combinations)], strict=True))
        return cls({v: (1 + sign * error, 1 + sign * error) for v, sign in signs.items()})

    def apply(self, speed: Mapping[str, Any], variant: str) -> dict[str, Any]:
        prefill, decode = self.factors.get(variant, (1.0, 1.0))
        wrong = dict(speed)
        wrong["prefill_tokens_per_s"] = speed["prefill_tokens_per_s"] / prefill
        for key in _DECODE_TIMES:
            if key in speed:
                wrong[key] = speed[key] * decode
        return wrong


def policy_config(cluster: Cluster, policy: str, prior_error: PriorError | None = None) -> DuetConfig:
    """``policy`` over the cluster, its speed priors the profiles' own or off by ``prior_error``."""
    raw = duet_config(cluster.replica_set, cluster.urls, policy, 1.0)
    if prior_error is not None:
        for name, variant in raw["models"][cluster.replica_set.model]["variants"].items():
            variant["speed"] = prior_error.apply(variant["speed"], name)
    return parse_config(yaml.safe_dump(raw), source=policy)


def arrivals(
    traces: Sequence[str], duration_s: float, rate_scale: float, cluster: Cluster, start_s: float = 0.0
) -> tuple[Arrival, ...]:
    return replay_arrivals(task_traces(traces), duration_s=duration_s, rate_scale=rate_scale, start_s=start_s,
                           max_context=cluster.replica_set.max_context)


def check_tasks(schedule: Sequence[Arrival], configs: Mapping[str, DuetConfig]) -> None:
    """Raises ValueError when a trace's task is not a task type of every policy."""
    for task in sorted({a.task for a in schedule}):
        for name, config in configs.items():
            if task not in config.policy.tasks:
                raise ValueError(f"task '{task}' (from --trace) is not a task type of policy '{name}' "
                                 f"(known: {', '.join(sorted(config.policy.tasks))}); name one as TASK=PATH")
