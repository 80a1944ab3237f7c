"""From a request's body and headers to a routing decision: classify, then route over the model's
replicas as the gateway currently sees them. Pure; the director calls it (and calls it again
while a request waits for a slot)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.config.active import ActiveConfig
from gateway.config.types import ModelSpec
from gateway.decision import Decision
from gateway.domain import Candidate, Replica, ReplicaState, RequestProfile
from gateway.endpoints import ChatBody, EmbeddingsBody, PromptView, RequestBody
from gateway.flow.classify import DetectionMemo, Target, classify, resolve_model
from gateway.flow.prefix import PromptPrefix, prompt_blocks
from gateway.routing.pd.rules import rule_named
from gateway.routing.pd.split import has_pairs, with_split
from gateway.routing.predictors import prefill_ms
from gateway.routing.router import route
from gateway.routing.timing import NO_TIMING, ExtensionTimer
from gateway.sessions import SessionVerdict, keep_seat
from gateway.sessions.seats import SeatLookup
from gateway.sessions.session_id import continues, session_key
from gateway.state.decodes import DecodeClaim
from gateway.state.lengths import NO_ESTIMATES, LengthEstimates
from gateway.state.prefix_index import PrefixLookup
from gateway.tokens import TokenCounter, count_chat_tokens, count_prompt_tokens


@dataclass(frozen=True, slots=True)
class Plan:
    """A classified, routed request: the model it names, its profile, the candidates the router
    saw (replica states as routing read them) and the decision."""

    target: Target
    profile: RequestProfile
    candidates: tuple[Candidate, ...]
    decision: Decision
    # The prompt's chained block ids (empty without a prefix index): what its replica learns.
    prefix_blocks: tuple[int, ...] = ()
    # What the request's session did to the decision (None: no session, or sessions off).
    session: SessionVerdict | None = None

    def candidate(self, replica_id: str) -> Candidate | None:
        return next((c for c in self.candidates if c.replica.id == replica_id), None)


@dataclass(frozen=True, slots=True)
class View:
    """What routing sees of the replicas for one request: the store's snapshot (already narrowed
    to what the caller may use), this gateway's pending prefill tokens and its in-flight
    requests' least decode slack, by replica id; the output lengths learned per task; the
    prefix index (None: prompt caches unknown, every replica cold); the sessions' seats
    (None: every request routed on its own); the task types the caller's API key names
    (``ApiKey.tasks``: what its application sends; empty: any)."""

    snapshot: Mapping[str, ReplicaState]
    backlog: Mapping[str, int] = dataclasses.field(default_factory=dict)
    slack: Mapping[str, float] = dataclasses.field(default_factory=dict)
    lengths: LengthEstimates = NO_ESTIMATES
    prefixes: PrefixLookup | None = None
    sessions: SeatLookup | None = None
    key_tasks: Sequence[str] = ()


def candidates_for(model: ModelSpec, view: View, replicas: tuple[Replica, ...] | None = None,
                   prefix: PromptPrefix | None = None) -> tuple[Candidate, ...]:
    """``replicas`` (default: all the model's) with their state as ``view`` shows them (see
    ``gateway.state.decodes`` and ``gateway.state.prefill`` for the two ledgers), and the tokens
    of ``prefix`` the view's prefix index believes each holds."""
    candidates = []
    for replica in model.replicas if replicas is None else replicas:
        state = view.snapshot.get(replica.id) or ReplicaState(replica.id)
        # One copy with both ledgers' figures: dataclasses.replace walks every field of the state,
        # per replica and request, and was the gateway's costliest single call under load.
        ledgers: dict[str, Any] = {}
        if pending := view.backlog.get(replica.id):
            ledgers["prefill_backlog_tokens"] = pending
        if (least := view.slack.get(replica.id)) is not None:
            ledgers["decode_slack_ms"] = least
        if ledgers:
            state = dataclasses.replace(state, **ledgers)
        cached = 0
        if prefix is not None and view.prefixes is not None and prefix.blocks:
            cached = view.prefixes.cached_blocks(replica.id, prefix.blocks) * prefix.block_tokens
        candidates.append(Candidate(replica, model.variant_of(replica), state, cached))
    return tuple(candidates)


def decode_claim(plan: Plan) -> DecodeClaim:
    """The request's slack and prefill time on each ranked replica, for the decode ledger."""
    profile, decision = plan.profile, plan.decision
    slack: dict[str, float | None] = {}
    prefill: dict[str, float] = {}
    cached = {c.replica.id: c.cached_tokens for c in plan.candidates}
    for replica in decision.ranked:
        prediction = decision.predictions.get(replica.id)
        slack[replica.id] = None if prediction is None else profile.budget.slack_ms(prediction, profile.expected_output_tokens)
        # A decode replica a split pairs computes only the prompt's last token: no stall there.
        prefill[replica.id] = 0.0 if replica.id in decision.prefill_for else prefill_ms(
            profile, plan.target.model.variant_of(replica), cached.get(replica.id, 0))
    return DecodeClaim(slack, prefill)


def count_input_tokens(inbound: Inbound, counter: TokenCounter) -> int:
    """The prompt's tokens: a chat's from its prompt view, a prompt's (or batch's) as given."""
    body, prompt = inbound.body, inbound.prompt
    if isinstance(body, ChatBody):
        return count_chat_tokens(counter, prompt.texts, prompt.messages, prompt.tools)
    return count_prompt_tokens(counter, body.prompt)


@dataclass(frozen=True, slots=True)
class Inbound:
    """A request as it arrived: its validated body, lower-cased headers, and its prompt length
    when the caller knows it exactly (a replayed trace does; the HTTP path counts it). ``prompt``:
    the body's prompt texts, read once here, which the count, the task's rules and the prefix
    blocks read (every plan of the request, not once each per plan)."""

    body: RequestBody
    headers: Mapping[str, str]
    prompt_tokens: int | None = None
    # The replica holding the state the request continues (``gateway.flow.affinity``).
    home: str | None = None
    # The prompt's chained block ids at the prefix index's block size (``routing.prefix_cache.
    # block_tokens``) when the caller knows them: a replayed trace does; else the gateway
    # computes them from the prompt (``gateway.flow.prefix``).
    prefix_blocks: tuple[int, ...] | None = None
    # The task detector's answer once the request has been planned: every later plan of the same
    # request (a waiting request's re-plans, an escalation) reads it instead of detecting again.
    detection: DetectionMemo = dataclasses.field(default_factory=DetectionMemo, compare=False, repr=False)
    # The replica ids the data plane lets this request use (an endpoint picker's subset hint,
    # ``gateway.epp``); None: every replica of the model.
    subset: frozenset[str] | None = None
    # Whether the caller's transport carries out a split decision (a prefill, then a decode:
    # ``gateway.proxy.disaggregated.PlannedCall``): the proxy's does; a picker that lets Envoy
    # carry the bytes does not, so its requests are never split.
    splits: bool = False
    prompt: PromptView = dataclasses.field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt", self.body.prompt_view())  # frozen: set once, here


def serving_replicas(model: ModelSpec, inbound: Inbound) -> tuple[Replica, ...]:
    """The replicas that may serve this request: the one holding its state, when it has a home
    the model still lists; else the model's embedding variants' for embeddings and only those
    when it has some (``embedding_variants``); else every replica. Only those of the inbound's
    subset, when it has one."""
    replicas = model.replicas if inbound.subset is None else tuple(r for r in model.replicas if r.id in inbound.subset)
    if inbound.home is not None and (home := [r for r in replicas if r.id == inbound.home]):
        return tuple(home)
    pool = model.embedding_variants
    if not pool:
        return replicas
    embeds = isinstance(inbound.body, EmbeddingsBody)
    return tuple(r for r in replicas if (r.variant in pool) == embeds)


def plan_request(active: ActiveConfig, inbound: Inbound, view: View, *, explain: bool = False, draw: float = 0.0,
                 timer: ExtensionTimer = NO_TIMING) -> Plan:
    """Classify and route with ``active``'s config and token counters. Raises ModelNotFound /
    InvalidRequest for the client's mistakes; an empty decision is returned as is
    (``gateway.flow.refusal`` turns it into the client's error). ``draw``: the request's number
    in [0, 1) (``gateway.routing.rollout.request_draw``); ``timer``: what the router's plugins'
    times go to."""
    config, counters = active.config, active.counters
    target = resolve_model(config, inbound.body.model)
    tokens = inbound.prompt_tokens
    if tokens is None:
        tokens = count_input_tokens(inbound, counters[target.model.name])
    profile = classify(inbound, target, config.policy, tokens, view.lengths, view.key_tasks)
    if draw and target.model.has_canary:  # only a canary reads the draw: spare the copy otherwise
        profile = dataclasses.replace(profile, draw=draw)
    prefix = None
    if view.prefixes is not None:
        prefix = prompt_prefix(inbound, counters[target.model.name], config.policy.prefix_cache.block_tokens)
    candidates = candidates_for(target.model, view, serving_replicas(target.model, inbound), prefix)
    decision = route(profile, candidates, config.policy.profile_for(profile.task), explain=explain, timer=timer)
    session = None
    if view.sessions is not None and config.policy.sessions.enabled:
        if (key := session_key(inbound.body, inbound.headers, target.model.name)) is not None:
            seat = view.sessions.seat(key) if continues(inbound.body, inbound.headers) else None
            decision, session = keep_seat(key, seat, profile, candidates, decision)
    if inbound.splits and has_pairs(candidates):
        split = config.policy.disaggregation
        rule = rule_named(split.rule, split.non_cached_tokens, split.prompt_tokens)
        decision = with_split(profile, decision, candidates, config.policy.profile_for(profile.task), rule)
    return Plan(target, profile, candidates, decision, () if prefix is None else prefix.blocks, session)


def prompt_prefix(inbound: Inbound, counter: TokenCounter, block_tokens: int) -> PromptPrefix:
    """The blocks the caller gave (a replay's trace ids), else the prompt's, computed."""
    blocks = inbound.prefix_blocks
    if blocks is None:
        blocks = prompt_blocks(inbound.body, inbound.prompt, counter, block_tokens)
    return PromptPrefix(blocks, block_tokens)
