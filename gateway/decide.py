"""From a validated body and headers to a routing decision: the pure glue between the HTTP edge
and the router, shared by the proxy path, the dry-run endpoint and ``duet explain``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.api.body import ChatBody, CompletionBody
from gateway.classify import Target, classify, resolve_model
from gateway.config.types import DuetConfig, ModelSpec
from gateway.domain import Candidate, Decision, ReplicaState, RequestProfile
from gateway.errors import ContextTooLong, InvalidRequest, NoHealthyReplica, RequestError
from gateway.routing.predictors import prefill_ms
from gateway.routing.router import route
from gateway.state.decodes import DecodeClaim, decode_slack_ms
from gateway.tokens import TokenCounter, count_chat_tokens, count_prompt_tokens


@dataclass(frozen=True, slots=True)
class Plan:
    target: Target
    profile: RequestProfile
    decision: Decision


def candidates_for(
    model: ModelSpec, snapshot: Mapping[str, ReplicaState], backlog: Mapping[str, int] | None = None,
    slack: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """The model's replicas with their state; ``backlog`` adds this gateway's pending prefill tokens,
    ``slack`` its in-flight requests' least decode slack (see ``gateway.state.decodes``)."""
    candidates = []
    for replica in model.replicas:
        state = snapshot.get(replica.id) or ReplicaState(replica.id)
        if backlog and (pending := backlog.get(replica.id)):
            state = dataclasses.replace(state, prefill_backlog_tokens=pending)
        if slack and (least := slack.get(replica.id)) is not None:
            state = dataclasses.replace(state, decode_slack_ms=least)
        candidates.append(Candidate(replica, model.variants[replica.variant], state))
    return candidates


def decode_claim(model: ModelSpec, profile: RequestProfile, decision: Decision) -> DecodeClaim:
    """The request's slack and prefill time on each ranked replica, for the decode ledger."""
    slack: dict[str, float | None] = {}
    prefill: dict[str, float] = {}
    for replica in decision.ranked:
        prediction = decision.predictions.get(replica.id)
        slack[replica.id] = None if prediction is None else decode_slack_ms(profile, prediction)
        prefill[replica.id] = prefill_ms(profile, model.variants[replica.variant])
    return DecodeClaim(slack, prefill)


def input_tokens(body: ChatBody | CompletionBody, counter: TokenCounter) -> int:
    if isinstance(body, ChatBody):
        return count_chat_tokens(counter, body.messages, body.tools)
    return count_prompt_tokens(counter, body.prompt)


def plan_request(
    config: DuetConfig,
    counters: Mapping[str, TokenCounter],
    snapshot: Mapping[str, ReplicaState],
    body: ChatBody | CompletionBody,
    headers: Mapping[str, str],
    *,
    backlog: Mapping[str, int] | None = None,
    slack: Mapping[str, float] | None = None,
    explain: bool = False,
) -> Plan:
    """Classify and route. Raises ModelNotFound / InvalidRequest for the client's mistakes; an
    empty decision is returned as is (see ``refuse`` to turn it into the client's error)."""
    target = resolve_model(config, body.model)
    tokens = input_tokens(body, counters[target.model.name])
    profile = classify(body, headers, target, config.policy, tokens)
    candidates = candidates_for(target.model, snapshot, backlog, slack)
    decision = route(profile, candidates, config.policy.profile_for(profile.task), explain=explain)
    return Plan(target, profile, decision)


def refuse(plan: Plan) -> RequestError:
    """The client's error for a decision without replicas, named after what blocked it."""
    blocker = plan.decision.reason.removeprefix("no-candidate:")
    variants = plan.target.model.variants
    if blocker == "context-fits" or _context_exceeded(plan):
        limit = max(v.max_model_len for v in variants.values())
        needed = plan.profile.input_tokens + (plan.profile.max_output_tokens or 1)
        return ContextTooLong(
            f"This model's maximum context length is {limit} tokens. However, you requested {needed} tokens "
            f"({plan.profile.input_tokens} in the messages, {plan.profile.max_output_tokens or 1} in the completion). "
            "Please reduce the length of the messages or completion.",
            param="messages",
        )
    if blocker == "pinned-variant":
        return NoHealthyReplica(f"Variant '{plan.profile.pinned_variant}' has no replicas.", retry_after_s=1.0)
    if blocker == "tools" or blocker == "tools-supported":
        return InvalidRequest("No variant of this model serves tool calls.", param="tools")
    return NoHealthyReplica(
        f"No healthy replica can serve this request for model '{plan.profile.model}' (blocked by '{blocker}').",
        retry_after_s=1.0,
    )


def _context_exceeded(plan: Plan) -> bool:
    needed = plan.profile.input_tokens + (plan.profile.max_output_tokens or 1)
    return all(needed > v.max_model_len for v in plan.target.model.variants.values())
