"""The request-flow layer: one request's life from parsed body to outcome, shared by the HTTP
gateway, the dry run, ``duet explain`` and ``duet replay``.

    body, headers -> Inbound -> Director.open (plan) -> admit -> dispatch -> first_token -> finish
                                                         hooks: dispatched, first_token,
                                                                attempt_ended, done, refused

The names below are what a caller of the lifecycle needs: the director and its hooks, the plan,
the request bodies, and what the caller hands the director (the config, the ledgers routing reads,
the vocabulary they speak), re-exported so the gateway's inside can move without breaking them.
Code outside ``gateway/`` imports this package and nothing deeper of the lifecycle. What is not
the lifecycle has its own public surface (tests/test_layers.py lists them): the autoscaling gauge
(``gateway.autoscaling``), online parity's sampling (``gateway.parity``), the task detector's
training and evaluation (``gateway.detect``), routing's plugin names (``gateway.routing.registry``).
Subscribers above the lifecycle (tracing, parity's sampling, the gauge's keeper) are wired by the
composer (``gateway.runtime``, the replay); nothing here imports them.
"""

from gateway.access.guard import Grant
from gateway.access.keys import ApiKey
from gateway.config.active import ActiveConfig
from gateway.config.load import load_config, parse_config
from gateway.config.policy import PrefixCacheSettings
from gateway.config.types import DuetConfig, ModelSpec, StateSettings
from gateway.cost import Price, ReplicaCost
from gateway.decision import Decision
from gateway.detect import Detection, TaskDetector
from gateway.domain import (
    Budget,
    Candidate,
    EngineConfig,
    EngineRole,
    Health,
    Prediction,
    Priority,
    Replica,
    ReplicaState,
    RequestProfile,
)
from gateway.endpoints import (
    ChatBody,
    CompletionBody,
    EmbeddingsBody,
    MessagesBody,
    RequestBody,
    ResponsesBody,
    TokenizeBody,
    parse_any_body,
    parse_body,
    parse_tokenize_body,
)
from gateway.errors import ConfigError, RequestError
from gateway.flow.admission import Action, Ruling
from gateway.flow.affinity import ResponseHomes
from gateway.flow.bookkeeping import gateway_hooks, routing_hooks
from gateway.flow.director import Director, Ledgers, Transport
from gateway.flow.escalation import OPT_IN_HEADER
from gateway.flow.exchange import Attempt, Exchange
from gateway.flow.hooks import Hooks
from gateway.flow.plan import Inbound, Plan, View, candidates_for, plan_request, prompt_prefix
from gateway.flow.upstream import upstream_request
from gateway.flow.waiting_room import RECHECK_S, Waiting, WaitingRoom
from gateway.outcome import AttemptFailure, Outcome
from gateway.routing.router import route
from gateway.sessions import Sessions
from gateway.speed import SpeedPrior
from gateway.state.decodes import DecodeLedger
from gateway.state.prefill import PrefillBacklog
from gateway.state.prefix_blocks import text_block_ids, token_block_ids
from gateway.state.prefix_index import InMemoryPrefixIndex, PrefixIndex
from gateway.state.store import InMemoryStateStore, StateStore, StoreSettings
from gateway.state.vllm_metrics import HistogramTotals, VllmStats, parse_vllm_metrics
from gateway.tokens import ApproxTokenCounter, HfTokenCounter, TokenCounter, count_prompt_tokens

__all__ = [
    "Action", "ActiveConfig", "ApiKey", "ApproxTokenCounter", "Attempt", "AttemptFailure", "Budget", "Candidate", "ChatBody",
    "CompletionBody", "ConfigError", "Decision", "Grant",
    "EmbeddingsBody", "MessagesBody", "RequestBody", "ResponsesBody", "ResponseHomes", "TokenizeBody", "parse_tokenize_body",
    "DecodeLedger", "Director", "DuetConfig", "EngineConfig", "EngineRole", "Exchange", "Health", "HfTokenCounter",
    "HistogramTotals", "Hooks", "InMemoryStateStore", "Inbound", "Ledgers", "ModelSpec", "Outcome", "Plan",
    "Prediction", "PrefillBacklog", "Price", "Priority", "RECHECK_S", "Replica", "ReplicaCost", "ReplicaState", "SpeedPrior",
    "RequestError",
    "RequestProfile", "Ruling", "StateSettings", "StateStore", "StoreSettings", "TokenCounter", "Transport", "View", "VllmStats",
    "Waiting", "WaitingRoom", "candidates_for", "count_prompt_tokens", "gateway_hooks", "load_config",
    "parse_any_body", "parse_body", "parse_config", "plan_request", "route", "routing_hooks", "upstream_request",
    # The prompt cache: Inbound.prefix_blocks, the index routing reads (Ledgers.prefixes, routing_hooks' prefixes)
    # and its block size (DuetConfig.policy.prefix_cache.block_tokens).
    "InMemoryPrefixIndex", "PrefixCacheSettings", "PrefixIndex", "prompt_prefix", "text_block_ids", "token_block_ids",
    # A replica's signals as the store takes them, from vLLM's /metrics text (the replica-state benchmark).
    "parse_vllm_metrics",
    # Sessions keep their variant (Ledgers.sessions, routing_hooks' sessions).
    "Sessions",
    # The header a client opts in to a checked stream with (a caller that cannot re-frame a whole
    # answer as a stream, the endpoint picker, drops it).
    "OPT_IN_HEADER",
    # The task detector classify asks (its training and evaluation are gateway.detect.training, off the serving path).
    "Detection", "TaskDetector",
]
