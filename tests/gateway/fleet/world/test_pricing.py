import pytest

from gateway.cost import CHARGEBACK_BATCH, ReplicaCost
from gateway.fleet.replay.setup import parse_cluster
from gateway.fleet.world.pricing import chargeback_price, replica_cost
from gateway.fleet.world.replica_sets import REPLICA_SETS
from serving.sim.profile import load_profile


def test_a_replica_costs_its_gpus_times_the_hourly_rate_busy_or_idle():
    cost = ReplicaCost(gpus=4, usd_per_gpu_hour=3.0)
    assert cost.usd_per_hour == 12.0
    assert cost.fleet_usd(replicas=3, seconds=1800) == pytest.approx(18.0)


def test_gpus_come_from_the_launch_profile():
    assert replica_cost("h100-70b-fp8").gpus == 4


def test_the_chargeback_is_the_replica_time_a_token_uses():
    profile = load_profile("h100-70b-bf16")
    cost = ReplicaCost(gpus=4, usd_per_gpu_hour=3.0)
    price = chargeback_price(profile, cost)
    usd_per_s = 12.0 / 3600
    assert price.input_per_mtok == pytest.approx(usd_per_s * profile.step.prefill_s_per_token * 1e6, rel=1e-3)
    step_s = profile.step.base_s + profile.step.decode_s_per_token * CHARGEBACK_BATCH
    assert price.output_per_mtok == pytest.approx(usd_per_s * step_s / CHARGEBACK_BATCH * 1e6, rel=1e-3)


def test_speculation_that_yields_more_tokens_per_step_charges_less_per_token():
    cost = ReplicaCost(gpus=4, usd_per_gpu_hour=3.0)
    base = chargeback_price(load_profile("h100-70b-bf16"), cost)
    eagle = chargeback_price(load_profile("h100-70b-eagle3"), cost)
    assert eagle.output_per_mtok < base.output_per_mtok
    assert eagle.input_per_mtok == base.input_per_mtok


@pytest.mark.parametrize("name", ["h100-70b-w4a16", "h100-70b-eagle3", "h100-70b-fp8-ngram"])
def test_every_pairing_has_a_standard_and_a_fast_variant_priced_by_gpu_hours(name):
    replica_set = REPLICA_SETS[name]
    assert [v.name for v in replica_set.variants] == ["standard", "fast"]
    assert all(v.cost is not None and v.cost.gpus == 4 for v in replica_set.variants)
    cluster = parse_cluster(f"{name}:standard=2,fast=2")
    assert cluster.fleet(3600) == {"replica_hours": 4.0, "fleet_usd": pytest.approx(48.0)}


def test_speculation_is_lossless_so_parity_allows_every_task_on_it():
    assert REPLICA_SETS["h100-70b-eagle3"].parity["fast"] is None
    assert REPLICA_SETS["h100-70b-fp8-ngram"].parity == {"standard": None, "fast": None}
    assert "reasoning" not in REPLICA_SETS["h100-70b-w4a16"].parity["fast"]


def test_a_set_without_replica_costs_has_no_bill():
    assert parse_cluster("smoke").fleet(60)["fleet_usd"] is None
