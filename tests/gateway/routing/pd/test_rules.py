"""The split rules, table-driven: llm-d's threshold on the uncached prompt, and Duet's rule on
budgets, slack and chunks. Predictions are given, so each row tests the rule alone."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.domain import Candidate, EngineConfig, EngineRole, Prediction, RequestProfile
from gateway.routing.pd.pairs import Pair
from gateway.routing.pd.rules import DuetRule, NeverSplit, ThresholdRule, rule_named
from gateway.routing.plugin import Option

from ..factories import candidate, request

NIXL = "NixlConnector"


def option(c: Candidate, ttft: float = 50.0, tpot: float = 20.0) -> Option:
    return Option(c, Prediction(ttft_ms=ttft, e2e_ms=ttft + 100 * tpot, tpot_ms=tpot), 0.0)


def role(c: Candidate, engine_role: EngineRole, **engine: object) -> Candidate:
    config = EngineConfig(engine_role, kv_connector=None if engine_role is EngineRole.BOTH else NIXL, **engine)  # type: ignore[arg-type]
    return dataclasses.replace(c, replica=dataclasses.replace(c.replica, engine=config))


def pair(cached_on_decode: int = 0, prefill_ttft: float = 60.0, decode_tpot: float = 15.0) -> Pair:
    decode = dataclasses.replace(role(candidate(index=2), EngineRole.DECODE), cached_tokens=cached_on_decode)
    return Pair(option(role(candidate(index=1), EngineRole.PREFILL), ttft=prefill_ttft),
                option(decode, tpot=decode_tpot))


THRESHOLD_CASES = [
    # (prompt tokens, cached on the decode replica, non_cached_tokens, prompt_tokens, split)
    (100, 0, 16, 0, True),
    (100, 84, 16, 0, True),   # exactly 16 uncached: at the threshold, split
    (100, 85, 16, 0, False),  # 15 uncached
    (100, 0, 0, 0, False),    # 0: the decider is off, never split (llm-d's behaviour)
    (100, 0, 16, 200, False),  # shorter than the prompt gate
    (300, 0, 16, 200, True),
]


@pytest.mark.parametrize(("tokens", "cached", "threshold", "prompt_gate", "split"), THRESHOLD_CASES)
def test_threshold_rule_splits_on_the_uncached_prompt_on_the_decode_replica(
        tokens: int, cached: int, threshold: int, prompt_gate: int, split: bool) -> None:
    rule = ThresholdRule(threshold, prompt_gate)
    whole = option(candidate())
    assert rule.split(request(input_tokens=tokens), whole, pair(cached_on_decode=cached))[0] is split


def test_the_threshold_ignores_budgets_and_load() -> None:
    """It is llm-d's rule: a short TPOT budget or a busy co-located replica changes nothing."""
    busy = option(candidate(running=50, decode_slack_ms=0.0), tpot=500.0)
    assert ThresholdRule().split(request(input_tokens=10, tpot_budget_ms=20), busy, pair())[0] is False


def duet_cases() -> list[tuple[str, RequestProfile, Option | None, Pair, bool, str]]:
    idle = option(candidate())
    return [
        ("no co-located replica", request(), None, pair(), True, "no co-located"),
        ("split TTFT misses what whole meets", request(input_tokens=5000, ttft_budget_ms=100),
         option(candidate(running=3), ttft=80.0), pair(prefill_ttft=120.0), False, "split TTFT"),
        ("whole TPOT misses what decode meets", request(tpot_budget_ms=30),
         option(candidate(), tpot=40.0), pair(decode_tpot=20.0), True, "whole TPOT"),
        ("both miss TPOT: no reason to split on it", request(tpot_budget_ms=30),
         option(candidate(), tpot=40.0), pair(decode_tpot=35.0), False, "short or cached"),
        ("prefill longer than in-flight slack", request(input_tokens=1000),
         option(candidate(running=2, decode_slack_ms=50.0)), pair(), True, "slack"),
        ("prefill within in-flight slack", request(input_tokens=100),
         option(candidate(running=2, decode_slack_ms=50.0)), pair(), False, "short or cached"),
        ("over one chunk beside running decodes", request(input_tokens=9000),
         option(candidate(running=4)), pair(), True, "over one chunk"),
        ("over one chunk on an idle replica", request(input_tokens=9000), idle, pair(), False, "short or cached"),
        ("long but cached on the co-located replica", request(input_tokens=9000),
         option(dataclasses.replace(candidate(running=4), cached_tokens=8900)), pair(), False, "short or cached"),
        ("a smaller chunk budget splits sooner", request(input_tokens=3000),
         option(role(candidate(running=4), EngineRole.BOTH, max_num_batched_tokens=2048)), pair(), True, "over one chunk"),
    ]


@pytest.mark.parametrize(("case", "profile", "whole", "the_pair", "split", "why"), duet_cases(),
                         ids=[c[0] for c in duet_cases()])
def test_duet_rule(case: str, profile: RequestProfile, whole: Option | None, the_pair: Pair, split: bool,
                   why: str) -> None:
    decided, reason = DuetRule().split(profile, whole, the_pair)
    assert decided is split
    assert why in reason


def test_rules_by_name() -> None:
    assert rule_named("duet") == DuetRule()
    assert rule_named("threshold", 64, 10) == ThresholdRule(64, 10)
    assert rule_named("never").split(request(input_tokens=10**5), None, pair())[0] is False
    assert isinstance(rule_named("never"), NeverSplit)
