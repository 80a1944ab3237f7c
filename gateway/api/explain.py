"""A routing decision as a document people read: the request profile, every plugin's verdict and
score per replica, the predictions, and the outcome. Used by ``duet explain`` and
POST /v1/duet/route."""

from __future__ import annotations

import dataclasses
from typing import Any

from gateway.flow.plan import Plan
from gateway.sessions import SessionVerdict


def explain_plan(plan: Plan) -> dict[str, Any]:
    decision = plan.decision
    profile = dataclasses.asdict(plan.profile)
    profile["priority"] = plan.profile.priority.value
    profile["plausible_tasks"] = sorted(plan.profile.tasks_to_allow)
    profile["task_abstained"] = plan.profile.task_source == "abstained"
    # The document keeps its flat budget fields (clients read them).
    budget = profile.pop("budget")
    profile.update(ttft_budget_ms=budget["ttft_ms"], latency_budget_ms=budget["latency_ms"], tpot_budget_ms=budget["tpot_ms"])
    replicas: dict[str, dict[str, Any]] = {}
    for replica in plan.target.model.replicas:
        replicas[replica.id] = {"variant": replica.variant, "url": replica.url, "verdicts": []}
    for verdict in decision.verdicts:
        entry: dict[str, Any] = {"plugin": verdict.plugin, "passed": verdict.passed}
        if verdict.score is not None:
            entry["score"] = round(verdict.score, 4)
        if verdict.reason:
            entry["reason"] = verdict.reason
        replicas[verdict.replica_id]["verdicts"].append(entry)
    for candidate in plan.candidates:
        replicas[candidate.replica.id]["cached_tokens"] = candidate.cached_tokens
    for replica_id, prediction in decision.predictions.items():
        replicas[replica_id]["prediction_ms"] = {
            "ttft": round(prediction.ttft_ms, 2), "tpot": round(prediction.tpot_ms, 3), "e2e": round(prediction.e2e_ms, 2),
        }
    return {
        "model": decision.model,
        "request": profile,
        "routing_profile": decision.profile,
        "decision": {
            "variant": decision.variant,
            "reason": decision.reason,
            "meets_budget": decision.meets_budget,
            "ranked_replicas": [r.id for r in decision.ranked],
            "blocked_by": None if decision.blocked_by is None else dataclasses.asdict(decision.blocked_by),
        },
        "replicas": replicas,
        "prefix_blocks": len(plan.prefix_blocks),
        "session": None if plan.session is None else session_document(plan.session),
    }


def session_document(verdict: SessionVerdict) -> dict[str, Any]:
    return {"turn": verdict.turn, "variant": verdict.variant, "moved_from": verdict.moved_from,
            "why": None if verdict.why is None else verdict.why.value, "kept_over": verdict.overrode,
            "header": verdict.header()}
