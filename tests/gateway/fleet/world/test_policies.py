import pytest
import yaml

from gateway.config.load import parse_config
from gateway.fleet.world.policies import DUET_POLICIES, POLICY_DIR, duet_config, litellm_config, policy_path
from gateway.fleet.world.replica_sets import REPLICA_SETS, variant_map
from serving.sim.profile import load_profile

URLS = {"standard": ["http://127.0.0.1:9001"], "fast": ["http://127.0.0.1:9002"]}
OBJECTIVES = {"always-standard": "fixed-order", "always-fast": "fixed-order", "round-robin": "round-robin",
              "least-loaded": "best-score", "static-split": "static-split", "llm-d-default": "best-score",
              "production-stack-prefixaware": "best-score", "duet": "cheapest-within-budget"}


@pytest.mark.parametrize("policy", DUET_POLICIES)
@pytest.mark.parametrize("replica_set", sorted(REPLICA_SETS))
def test_every_shipped_policy_makes_a_config_the_gateway_loads(policy, replica_set):
    raw = duet_config(REPLICA_SETS[replica_set], URLS, policy, time_scale=2.0)
    config = parse_config(yaml.safe_dump(raw))
    model = config.models[REPLICA_SETS[replica_set].model]
    assert set(model.variants) == {"standard", "fast"}
    shipped = yaml.safe_load(policy_path(policy).read_text())["routing"]
    objective = next(p for p in shipped["plugins"] if p["name"] == shipped["profiles"]["default"]["objective"])
    assert objective["type"] == OBJECTIVES[policy]


def test_a_policy_brings_its_own_scrape_interval_scaled_like_its_budgets():
    llmd = duet_config(REPLICA_SETS["h100-70b"], URLS, "llm-d-default", time_scale=2.0)
    duet = duet_config(REPLICA_SETS["h100-70b"], URLS, "duet", time_scale=2.0)
    assert llmd["state"]["scrape_interval_s"] == pytest.approx(0.025)  # llm-d's 50 ms in model time
    assert duet["state"]["scrape_interval_s"] == 0.25  # the benchmark's own


def test_compressed_runs_scale_budgets_and_speed_priors():
    real = duet_config(REPLICA_SETS["h100-70b"], URLS, "duet", time_scale=1.0)
    fast = duet_config(REPLICA_SETS["h100-70b"], URLS, "duet", time_scale=4.0)
    assert fast["routing"]["tasks"]["chat"]["ttft_ms"] == real["routing"]["tasks"]["chat"]["ttft_ms"] / 4
    speed, scaled = (c["models"]["duet-70b"]["variants"]["standard"]["speed"] for c in (real, fast))
    assert scaled["decode_s_per_token"] == pytest.approx(speed["decode_s_per_token"] / 4)
    assert scaled["prefill_tokens_per_s"] == pytest.approx(speed["prefill_tokens_per_s"] * 4)
    # From the h100-70b-bf16 profile: its step's fixed cost, and the inverse of its prefill cost.
    step = load_profile("h100-70b-bf16").step
    assert speed["decode_s_per_token"] == pytest.approx(step.base_s)
    assert speed["prefill_tokens_per_s"] == pytest.approx(1 / step.prefill_s_per_token)


def test_litellm_gets_every_replica_under_one_name_with_latency_routing():
    config = litellm_config(REPLICA_SETS["h100-70b"], URLS, api_key="sk-x")
    assert config["router_settings"]["routing_strategy"] == "latency-based-routing"
    assert [d["litellm_params"]["api_base"] for d in config["model_list"]] == ["http://127.0.0.1:9001/v1", "http://127.0.0.1:9002/v1"]
    assert {d["model_name"] for d in config["model_list"]} == {"duet-70b"}
    assert variant_map(REPLICA_SETS["h100-70b"], URLS)["http://127.0.0.1:9002/v1"] == "fast"


@pytest.mark.parametrize("path", sorted(POLICY_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_benchmark_policy_carries_the_fast_variants_parity_verdicts(path):
    """The same allowed tasks in every policy's config: FP8 keeps long documents off the fast
    variant, whichever policy routes (the score holds every policy to them too)."""
    config = parse_config(yaml.safe_dump(duet_config(REPLICA_SETS["h100-70b"], URLS, str(path), time_scale=1.0)))
    variants = config.models["duet-70b"].variants
    assert variants["fast"].allowed_tasks == frozenset({"chat", "coding", "agent", "extraction"})
    assert variants["standard"].allowed_tasks is None
    assert "long-context" in config.policy.tasks


def test_a_prior_error_makes_the_benchmark_prior_other_than_the_profile():
    from gateway.fleet.world.prior_error import PriorError

    exact = duet_config(REPLICA_SETS["h100-70b"], URLS, "duet", time_scale=1.0)
    wrong = duet_config(REPLICA_SETS["h100-70b"], URLS, "duet", time_scale=1.0,
                        prior_error=PriorError({"fast": (1.3, 1.3), "standard": (0.7, 0.7)}))
    for variant, factor in (("fast", 1.3), ("standard", 0.7)):
        truth, prior = (c["models"]["duet-70b"]["variants"][variant]["speed"] for c in (exact, wrong))
        assert prior["decode_s_per_token"] == pytest.approx(truth["decode_s_per_token"] * factor)
        assert prior["prefill_tokens_per_s"] == pytest.approx(truth["prefill_tokens_per_s"] / factor)
