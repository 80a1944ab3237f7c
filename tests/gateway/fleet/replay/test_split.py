"""Split requests in the replay: the same lifecycle and rule as the proxy, the prefill leg on the
prefill replica's engine, the KV over the simulator's link, the answer from the decode engine."""

from __future__ import annotations

import pytest

from gateway.domain import EngineRole
from gateway.errors import ConfigError
from gateway.fleet.replay.setup import parse_cluster, pd_config, policy_config, scrape_interval_s
from gateway.fleet.replay.simulation import Replay
from gateway.fleet.replay.split import decode_leg, is_prefill_leg, prefill_leg
from gateway.fleet.workload.traces import Arrival
from serving.sim.engine.events import SimRequest

CLUSTER = "h100-70b:standard=3,fast=1"
LONG, SHORT = Arrival(1.0, "long-context", 12000, 40), Arrival(1.0, "chat", 8, 40)


def run(rule: str, *arrivals: Arrival, roles: str = "1:1"):
    cluster = parse_cluster(CLUSTER)
    replay = Replay(pd_config(cluster, "duet", roles, rule), cluster.profiles())
    return replay, replay.run(list(arrivals))


def test_the_legs() -> None:
    request = SimRequest("r1", 500, 64, natural_tokens=40)
    leg = prefill_leg(request)
    assert leg.request_id == "r1:prefill" and leg.max_tokens == 1 and leg.remote_decode and not leg.remote_prefill
    assert is_prefill_leg(leg.request_id) and not is_prefill_leg("r1")
    assert decode_leg(request).remote_prefill and decode_leg(request).max_tokens == 64


def test_a_split_request_is_prefilled_on_one_engine_and_answered_by_the_decode_engine() -> None:
    replay, (result,) = run("threshold", LONG)
    assert result.status == "ok" and result.replica == "duet-70b/standard/1"  # the decode replica
    prefill, decode = replay.engines["duet-70b/standard/0"], replay.engines["duet-70b/standard/1"]
    assert prefill.counters.prompt_tokens == 12000 and decode.counters.kv_transfers == 1
    assert result.output_tokens == 40 and "split:" in result.route
    # The client's TTFT counts the prefill leg: more than the decode engine's own first token.
    _, (whole,) = run("never", LONG)
    assert whole.replica == "duet-70b/standard/2" and result.ttft_s > 0.8 * whole.ttft_s


@pytest.mark.parametrize("rule", ["threshold", "duet", "never"])
def test_a_short_prompt_is_served_whole(rule: str) -> None:
    replay, (result,) = run(rule, SHORT)
    assert result.status == "ok" and result.replica in ("duet-70b/standard/2", "duet-70b/fast/0")
    assert replay.engines["duet-70b/standard/0"].counters.prompt_tokens == 0  # the prefill replica saw nothing


def test_bad_roles_are_refused() -> None:
    with pytest.raises(ValueError, match="need 4 standard replicas"):
        run("duet", SHORT, roles="2:2")


def test_a_policy_name_may_carry_a_pd_layout() -> None:
    config = policy_config(parse_cluster(CLUSTER), "duet@pd=1:1:threshold")
    roles = [r.engine.role for r in config.replicas if r.variant == "standard"]
    assert roles == [EngineRole.PREFILL, EngineRole.DECODE, EngineRole.BOTH]
    assert config.policy.disaggregation.rule == "threshold"
    assert scrape_interval_s("duet@pd=1:1:threshold") == scrape_interval_s("duet")


def test_an_n_gram_variant_decodes_kv_the_standard_prefill_computed() -> None:
    """``P:D+F``: the fast (n-gram, on the standard weights) variant's first F replicas decode
    only, from the standard prefill replica's KV; a quantized fast variant is refused the layout."""
    cluster = parse_cluster("h100-70b-ngram:standard=2,fast=2")
    config = pd_config(cluster, "duet", "1:0+1", "threshold")
    assert config.models["duet-70b"].variants["fast"].shares_weights_with == "standard"
    replay = Replay(config, cluster.profiles())
    (result,) = replay.run([Arrival(1.0, "coding", 3000, 40)])
    assert result.status == "ok" and result.replica == "duet-70b/fast/0" and "split:" in result.route
    assert replay.engines["duet-70b/standard/0"].counters.prompt_tokens == 3000  # prefilled on standard
    assert replay.engines["duet-70b/fast/0"].counters.kv_transfers == 1
    with pytest.raises(ValueError, match="need 3 fast replicas"):
        pd_config(cluster, "duet", "1:0+3", "duet")
    with pytest.raises(ConfigError, match="shares_weights_with"):
        pd_config(parse_cluster("h100-70b:standard=2,fast=2"), "duet", "1:0+1", "duet")


def test_llm_d_layout_decode_pods_serve_whole_what_the_decider_keeps_and_decode_what_it_splits() -> None:
    """``P:0``: P prefill replicas and the rest ``both`` with a connector (vLLM's kv_both, llm-d's
    decode pods): the threshold rule's long prompt is prefilled apart and decoded on one of them,
    its short prompt served whole by one, the objective seeing them as the variant's replicas."""
    cluster = parse_cluster("h100-70b:standard=3,fast=1")
    replay = Replay(pd_config(cluster, "always-standard", "1:0", "threshold"), cluster.profiles())
    long, short = replay.run([LONG, Arrival(30.0, "chat", 8, 40)])
    assert long.status == short.status == "ok"
    assert "split:" in long.route and long.replica in ("duet-70b/standard/1", "duet-70b/standard/2")
    assert replay.engines[long.replica].counters.kv_transfers == 1
    assert "whole:" in short.route and short.replica in ("duet-70b/standard/1", "duet-70b/standard/2")
    assert replay.engines["duet-70b/standard/0"].counters.prompt_tokens == 12000  # the long prompt only
