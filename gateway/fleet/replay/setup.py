"""What a replay runs: a replica set with counts per variant, a policy as a Duet config, and the
trace's arrivals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import yaml

from gateway.fleet.replay.policy_names import PolicyNameError, parse_policy_name
from gateway.fleet.workload.traces import Arrival, TraceWindow, replay_arrivals, task_traces
from gateway.fleet.world.policies import duet_config, policy_state
from gateway.fleet.world.prior_error import PriorError
from gateway.fleet.world.replica_sets import REPLICA_SETS, ReplicaSet
from gateway.flow import DuetConfig, StateSettings, parse_config
from serving.sim.profile import Profile

if TYPE_CHECKING:
    from gateway.fleet.replay.windows import Window


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
        return {v.name: v.sim_profile() for v in self.replica_set.variants}

    @property
    def parity(self) -> dict[str, frozenset[str] | None]:
        """variant -> the task types parity allows on it (None: all): what every policy is scored by."""
        return {v.name: None if v.allowed_tasks is None else frozenset(v.allowed_tasks) for v in self.replica_set.variants}

    def prior_error(self, fraction: float, seed: int) -> PriorError:
        """The speed priors' error of ``seed``, per variant (``PriorError.draw``)."""
        return PriorError.draw([v.name for v in self.replica_set.variants], fraction, seed)

    def fleet(self, seconds: float) -> dict[str, float | None]:
        """What this fixed fleet costs for ``seconds``: replica-hours, and their bill in USD (None
        for a set without replica costs). The same for every policy: idle replicas are paid too."""
        replicas = sum(self.counts.values())
        return {"replica_hours": round(replicas * seconds / 3600.0, 4),
                "fleet_usd": self.replica_set.fleet_usd(self.counts, seconds)}


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


# A policy named ``duet@pd=1:2:threshold`` is ``duet`` over a fleet whose standard variant has
# 1 prefill and 2 decode replicas, split by the threshold rule (``pd_config``); ``duet@pd=1:2+1:duet``
# also makes the first fast replica decode-only on the standard prefill's KV (a speculative variant
# proposing from tokens alone: n-gram). ``@chunk=`` sets chunk budgets (``policy_names``).
PD_LAYOUT = "@pd="


def policy_config(cluster: Cluster, policy: str, prior_error: PriorError | None = None) -> DuetConfig:
    """``policy`` over the cluster, its speed priors the profiles' own or off by ``prior_error``;
    with a ``@pd=P:D[+F]:RULE`` suffix, over prefill/decode roles (``lay_out_roles``); with
    ``@chunk=``, each replica at its chunk budget (``lay_out_chunks``)."""
    name = parse_policy_name(policy)
    raw = duet_config(cluster.replica_set, cluster.urls, name.base, 1.0, prior_error)
    if name.pd is not None:
        roles, _, rule = name.pd.rpartition(":")
        lay_out_roles(raw, cluster, roles, rule, policy)
    if name.chunk is not None:
        lay_out_chunks(raw, cluster, name.chunk.budgets(cluster.counts, policy), policy)
    return parse_config(yaml.safe_dump(raw), source=policy)


def pd_config(cluster: Cluster, policy: str, roles: str, rule: str, prior_error: PriorError | None = None) -> DuetConfig:
    """``policy`` over the cluster with ``roles`` split by ``rule``: ``policy@pd=ROLES:RULE``."""
    return policy_config(cluster, f"{policy}{PD_LAYOUT}{roles}:{rule}", prior_error)


def lay_out_roles(raw: dict[str, Any], cluster: Cluster, roles: str, rule: str, policy: str) -> None:
    """Gives the config ``raw`` the ``roles`` (``P:D`` or ``P:D+F``): the standard variant's
    first P replicas prefill-only and next D decode-only (the rest both), and the fast variant's
    first F decode-only on the standard prefill's KV (``shares_weights_with``: the config refuses
    it unless the fast variant is speculative over the standard weights), through NIXL, split by
    ``rule`` (``duet``, ``threshold``, ``never``; gateway.routing.pd), the engine-role filter in
    every routing profile (as duet.yaml requires beside P/D replicas)."""
    where = f"{policy} @pd"
    prefill, _, decodes = roles.partition(":")
    decode, _, fast_decode = decodes.partition("+")
    if not (prefill.isdigit() and decode.isdigit() and (fast_decode or "0").isdigit()):
        raise PolicyNameError(where, f"bad roles '{roles}': P:D or P:D+F, the standard replicas that prefill and "
                              "decode and the fast ones that decode the standard prefill's KV")
    variants = raw["models"][cluster.replica_set.model]["variants"]
    replicas = variants["standard"]["replicas"]
    if int(prefill) + int(decode) > len(replicas):
        raise PolicyNameError(where, f"roles '{roles}' need {int(prefill) + int(decode)} standard replicas, "
                              f"the fleet has {len(replicas)}")
    for i, replica in enumerate(replicas):
        role = "prefill" if i < int(prefill) else "decode" if i < int(prefill) + int(decode) else "both"
        replica["engine"] = {"role": role, "kv_connector": "NixlConnector"}
    if int(fast_decode or 0):
        fast = variants["fast"]
        if int(fast_decode) > len(fast["replicas"]):
            raise PolicyNameError(where, f"roles '{roles}' need {fast_decode} fast replicas, "
                                  f"the fleet has {len(fast['replicas'])}")
        fast["shares_weights_with"] = "standard"
        for i, replica in enumerate(fast["replicas"]):
            replica["engine"] = {"role": "decode" if i < int(fast_decode) else "both", "kv_connector": "NixlConnector"}
    routing = raw["routing"]
    routing["plugins"].append({"type": "engine-role", "name": "engine-role"})
    for profile in routing["profiles"].values():
        profile["filters"].append("engine-role")
    routing["disaggregation"] = {"rule": rule}


def lay_out_chunks(raw: dict[str, Any], cluster: Cluster, budgets: Mapping[str, list[int | None]], policy: str) -> None:
    """Gives each replica of the config ``raw`` its chunk budget (variant -> one per replica, in
    order; None: its profile's) in its ``engine`` section, beside any role. A budget below the
    profile's ``max_num_seqs`` is refused, as vLLM refuses to start with one."""
    variants = raw["models"][cluster.replica_set.model]["variants"]
    profiles = cluster.profiles()
    for variant, per_replica in budgets.items():
        floor = profiles[variant].engine.max_num_seqs
        for replica, budget in zip(variants[variant]["replicas"], per_replica, strict=True):
            if budget is None:
                continue
            if budget < floor:
                raise PolicyNameError(f"{policy} @chunk.{variant}", f"{budget} tokens is below the profile's "
                                      f"max_num_seqs ({floor}): vLLM refuses to start so")
            replica.setdefault("engine", {})["max_num_batched_tokens"] = budget


def arrivals(
    traces: Sequence[str], duration_s: float, rate_scale: float, cluster: Cluster, start_s: float = 0.0
) -> tuple[Arrival, ...]:
    return replay_arrivals(task_traces(traces), TraceWindow(duration_s, rate_scale=rate_scale, start_s=start_s),
                           max_context=cluster.replica_set.max_context)


def check_tasks(schedule: Sequence[Arrival], configs: Mapping[str, DuetConfig]) -> None:
    """Raises ValueError when a trace's task is not a task type of every policy."""
    for task in sorted({a.task for a in schedule}):
        for name, config in configs.items():
            if task not in config.policy.tasks:
                raise ValueError(f"task '{task}' (from --trace) is not a task type of policy '{name}' "
                                 f"(known: {', '.join(sorted(config.policy.tasks))}); name one as TASK=PATH")


def window_arrivals(traces: Sequence[str], cluster: Cluster, window: Window, seed_index: int) -> tuple[Arrival, ...]:
    """Seed ``seed_index``'s window of ``traces`` at load 1: its trace seconds as they came."""
    return arrivals(traces, window.span_s, 1.0, cluster, window.start_for(seed_index))


def at_load(schedule: Sequence[Arrival], load: float) -> tuple[Arrival, ...]:
    """``schedule`` arriving ``load`` times as fast: the same requests (exactly ``replay_arrivals``
    with ``rate_scale=load`` over the window's trace seconds), so every load replays one window."""
    return tuple(replace(a, at_s=a.at_s / load) for a in schedule)


def scrape_interval_s(policy: str) -> float:
    """How often the replay scrapes the replicas for ``policy``: its file's own interval where it
    copies a scheduler that has one (llm-d's 50 ms), else the gateway's default."""
    return float(policy_state(parse_policy_name(policy).base).get("scrape_interval_s", StateSettings().scrape_interval_s))
