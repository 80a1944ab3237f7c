"""What a replay runs, from a policy's name: ``@chunk=`` budgets reach the simulated engines and
the router's view of each replica, alone or beside ``@pd=`` roles."""

from __future__ import annotations

import pytest

from gateway.domain import Candidate, EngineRole, ReplicaState
from gateway.fleet.replay.policy_names import PolicyNameError
from gateway.fleet.replay.setup import parse_cluster, policy_config, scrape_interval_s
from gateway.fleet.replay.simulation import Replay
from gateway.fleet.workload.traces import Arrival
from gateway.flow import DuetConfig
from gateway.routing.predictors import StepModelPredictor
from gateway.routing.roles import chunk_budget
from tests.gateway.routing.factories import request

CLUSTER = "h100-70b:standard=4,fast=2"
MODEL = "duet-70b"


def candidates(config: DuetConfig) -> dict[str, Candidate]:
    """Each replica as the router sees it before any scrape: its config and its variant's prior."""
    variants = config.models[MODEL].variants
    return {r.id: Candidate(r, variants[r.variant], ReplicaState(r.id)) for r in config.replicas}


def budgets(config: DuetConfig) -> dict[str, int]:
    return {replica_id: chunk_budget(c) for replica_id, c in candidates(config).items()}


def engine_budgets(replay: Replay) -> dict[str, int]:
    return {replica_id: e.profile.engine.max_num_batched_tokens for replica_id, e in replay.engines.items()}


def test_a_uniform_budget_reaches_every_engine_and_the_router() -> None:
    cluster = parse_cluster(CLUSTER)
    config = policy_config(cluster, "llm-d-default@chunk=2048")
    assert set(budgets(config).values()) == {2048}
    assert set(engine_budgets(Replay(config, cluster.profiles())).values()) == {2048}
    # Without the suffix, the profiles' own (vLLM's default for them, 8192).
    assert set(budgets(policy_config(cluster, "llm-d-default")).values()) == {8192}
    assert scrape_interval_s("llm-d-default@chunk=2048") == scrape_interval_s("llm-d-default")


def test_heterogeneous_budgets_go_replica_by_replica() -> None:
    cluster = parse_cluster(CLUSTER)
    config = policy_config(cluster, "duet@chunk=standard:1x16384+2048:fast:1x8192+4096")
    expected = {f"{MODEL}/standard/0": 16384, f"{MODEL}/standard/1": 2048, f"{MODEL}/standard/2": 2048,
                f"{MODEL}/standard/3": 2048, f"{MODEL}/fast/0": 8192, f"{MODEL}/fast/1": 4096}
    assert budgets(config) == expected
    replay = Replay(config, cluster.profiles())
    assert engine_budgets(replay) == expected
    # The router predicts a long prompt's first token sooner where the chunks are larger.
    views = candidates(config)
    long_prompt = request(input_tokens=20000)
    big, small = (StepModelPredictor().predict(long_prompt, views[f"{MODEL}/standard/{i}"]) for i in (0, 1))
    assert big.ttft_ms < small.ttft_ms


def test_a_long_prompt_on_a_smaller_budget_takes_more_steps_in_the_engine() -> None:
    cluster = parse_cluster("h100-70b:standard=1,fast=0")
    long_prompt = Arrival(0.0, "long-context", 16000, 8)

    def ttft(policy: str) -> float:
        (result,) = Replay(policy_config(cluster, policy), cluster.profiles()).run([long_prompt])
        assert result.status == "ok" and result.ttft_s is not None
        return result.ttft_s

    assert ttft("always-standard@chunk=2048") > ttft("always-standard@chunk=16384")


def test_chunk_budgets_compose_with_pd_roles() -> None:
    cluster = parse_cluster(CLUSTER)
    for policy in ("duet@pd=2:0:duet@chunk=standard:2x16384+2048", "duet@chunk=standard:2x16384+2048@pd=2:0:duet"):
        config = policy_config(cluster, policy)
        standard = [r for r in config.replicas if r.variant == "standard"]
        assert [(r.engine.role, r.engine.max_num_batched_tokens) for r in standard] == [
            (EngineRole.PREFILL, 16384), (EngineRole.PREFILL, 16384), (EngineRole.BOTH, 2048), (EngineRole.BOTH, 2048)]
        assert all(r.engine.kv_connector == "NixlConnector" for r in standard)
        assert config.policy.disaggregation.rule == "duet"
        engines = Replay(config, cluster.profiles()).engines
        assert engines[f"{MODEL}/standard/0"].profile.engine.role == "prefill"
        assert engines[f"{MODEL}/standard/0"].profile.engine.max_num_batched_tokens == 16384


@pytest.mark.parametrize(("policy", "message"), [
    ("duet@chunk=512", "below the profile's max_num_seqs"),
    ("duet@chunk=standard:5x2048", "the variant has 4"),
    ("duet@pd=9:0:duet@chunk=2048", "need 9 standard replicas"),
    ("duet@pd=x:0:duet", "bad roles"),
])
def test_a_layout_the_fleet_cannot_run_is_refused(policy: str, message: str) -> None:
    with pytest.raises(PolicyNameError, match=message):
        policy_config(parse_cluster(CLUSTER), policy)
