"""Why an autoscaled day lost requests or money, for one seed (``duet plan-day --diagnose``): per
hour the good share, what the lost requests were, the minutes a variant with engine roles had
prefill-only replicas ready and no more decoders than them, and what the replica-hours paid for.

A diagnosis uses hindsight (every request's outcome, every replica's life): it explains a day,
it never sizes one. With ``--deployment-per-variant`` the same day is replayed with each variant
one Deployment, whose shrinks are blind to engine roles: what per-role Deployments buy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.fleet.capacity.days.daily import DaySpec, replay_autoscaled, seed_day
from gateway.fleet.replay.fleet import FleetTimeline
from gateway.fleet.replay.report import Parity, allowed, summarize
from gateway.fleet.replay.request_result import RequestResult
from gateway.flow import EngineRole

HOUR_S = 3600.0


@dataclass(frozen=True, slots=True)
class PaidHours:
    """A fleet's replica-hours by what the replicas were doing: loading (asked for, not ready),
    serving (ready, not removed) and draining (removed, requests still running)."""

    loading: float
    serving: float
    draining: float


def good_by_hour(results: Sequence[RequestResult], parity: Parity) -> dict[int, float]:
    """Per hour of arrival, the share of requests good (budgets met on a variant parity allows)."""
    good: Counter[int] = Counter()
    total: Counter[int] = Counter()
    for r in results:
        hour = int(r.arrival_s // HOUR_S)
        total[hour] += 1
        good[hour] += r.met_slo and allowed(r, parity)
    return {hour: good[hour] / total[hour] for hour in sorted(total)}


def losses(results: Sequence[RequestResult], parity: Parity) -> Counter[str]:
    """The requests not good, by why: refused (with the status the gateway answered), a late
    first token, late after it (TPOT or end to end), or served on a variant parity refuses."""
    out: Counter[str] = Counter()
    for r in results:
        if r.status != "ok":
            out[f"refused {r.refusal_status or r.status}"] += 1
        elif not r.met_slo:
            first_s = r.ttft_s if r.ttft_s is not None else r.e2e_s
            late_first = r.budget.ttft_ms is not None and first_s is not None and first_s * 1e3 > r.budget.ttft_ms
            out["late first token" if late_first else "late after the first token"] += 1
        elif not allowed(r, parity):
            out["parity"] += 1
    return out


def thin_decode_minutes(timeline: FleetTimeline, variant: str) -> Counter[tuple[int, int]]:
    """Minutes (sampled at each minute's start) when ``variant`` had prefill-only replicas ready
    and no more decoders ready than them, by (prefill-only, decoders) ready. A prefill-only
    replica serves no request alone: with none ready to decode, the variant's requests are refused."""
    out: Counter[tuple[int, int]] = Counter()
    for minute in range(int(timeline.end_s // 60)):
        ready = [life.replica.engine.role for life in timeline.lives
                 if life.variant == variant and life.ready_at(minute * 60.0)]
        prefill = sum(role is EngineRole.PREFILL for role in ready)
        if prefill and len(ready) - prefill <= prefill:
            out[(prefill, len(ready) - prefill)] += 1
    return out


def paid_hours(timeline: FleetTimeline) -> PaidHours:
    """The timeline's replica-hours, by what the replicas were doing (``PaidHours``)."""
    loading = serving = draining = 0.0
    for life in timeline.lives:
        removed = timeline.end_s if life.removed_s is None else life.removed_s
        left = timeline.end_s if life.left_s is None else life.left_s
        loading += min(life.ready_s, removed) - life.asked_s
        serving += max(0.0, removed - life.ready_s)
        draining += max(0.0, left - removed)
    return PaidHours(loading / HOUR_S, serving / HOUR_S, draining / HOUR_S)


def diagnose(spec: DaySpec, index: int) -> list[str]:
    """Seed ``index``'s autoscaled day replayed again, and the lines that say where it lost."""
    day = seed_day(spec, index)
    results, timeline = replay_autoscaled(spec, day)
    parity = day.cluster.parity
    paid = paid_hours(timeline)
    deploy = "one Deployment per variant" if spec.deployment_per_variant else "one Deployment per engine group"
    lines = [f"{spec.replica_set}, seed {day.seed} ({spec.window}), {deploy}: "
             f"{summarize(results, spec.day_s, parity)['good_fraction']:.2%} good, "
             f"${timeline.summary(spec.replicas)['fleet_usd']:,.0f}",
             "good by hour: " + " ".join(f"{h:02d}h {share:.1%}" for h, share in good_by_hour(results, parity).items()),
             "not good: " + _counts(losses(results, parity)),
             f"replica-hours: {paid.loading:.1f} loading, {paid.serving:.1f} serving, {paid.draining:.1f} draining; "
             f"{sum(life.removed_s is not None and life.removed_s < life.ready_s for life in timeline.lives)} of "
             f"{len(timeline.lives)} replicas removed before they were ready"]
    for variant in timeline.variants:
        thin = thin_decode_minutes(timeline, variant)
        if thin:
            lines.append(f"{variant}: minutes with prefill-only replicas ready and no more decoders, by "
                         f"(prefill-only, decoders): {_counts({f'{p}+{d}': n for (p, d), n in thin.items()})}")
    return lines


def _counts(counts: Mapping[str, int]) -> str:
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    return ", ".join(f"{name} {n:,}" for name, n in ranked) or "none"
