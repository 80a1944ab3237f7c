from pathlib import Path

import pytest
import yaml

from gateway.config import load_config, parse_config
from gateway.cost import ReplicaCost
from gateway.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "deploy" / "config").glob("*.yaml"))
DEMO = ROOT / "deploy" / "config" / "demo.yaml"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_config_loads(path):
    config = load_config(path)
    assert config.models and config.policy.profiles


def demo_with(edit):
    raw = yaml.safe_load(DEMO.read_text())
    edit(raw)
    return yaml.safe_dump(raw, sort_keys=False)


def error_of(edit) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(demo_with(edit))
    return info.value


ERROR_CASES = [
    ("unknown top-level key", lambda r: r.update(extra=1), "extra", "unknown key"),
    ("unknown variant key", lambda r: r["models"]["smollm2"]["variants"]["fast"].update(speedup=2),
     "models.smollm2.variants.fast.speedup", "unknown key"),
    ("bad kind", lambda r: r["models"]["smollm2"]["variants"]["fast"].update(kind="turbo"),
     "models.smollm2.variants.fast.kind", ""),
    ("negative price", lambda r: r["models"]["smollm2"]["variants"]["fast"]["price"].update(input_per_mtok=-1),
     "models.smollm2.variants.fast.price.input_per_mtok", ""),
    ("bad url", lambda r: r["models"]["smollm2"]["variants"]["fast"]["replicas"][0].update(url="not a url"),
     "models.smollm2.variants.fast.replicas.0.url", ""),
    ("unknown task in allowed_tasks", lambda r: r["models"]["smollm2"]["variants"]["fast"].update(allowed_tasks=["poetry"]),
     "models.smollm2.variants.fast.allowed_tasks", "poetry"),
    ("undefined plugin", lambda r: r["routing"]["profiles"]["default"].update(objective="nope"),
     "routing.profiles.default.objective", "undefined plugin 'nope'"),
    ("wrong plugin kind", lambda r: r["routing"]["profiles"]["default"].update(objective="healthy"),
     "routing.profiles.default.objective", "is a filter"),
    ("unknown plugin type", lambda r: r["routing"]["plugins"].append({"type": "magic", "name": "m"}),
     "routing.plugins.10.type", "unknown plugin type"),
    ("unknown plugin param", lambda r: r["routing"]["plugins"][7].update(params={"margn": 1}),
     "routing.plugins.7.params.margn", "unknown parameter"),
    ("bad plugin param type", lambda r: r["routing"]["plugins"][7].update(params={"margin": "big"}),
     "routing.plugins.7.params.margin", ""),
    ("duplicate plugin", lambda r: r["routing"]["plugins"].append({"type": "healthy", "name": "healthy"}),
     "routing.plugins.10.name", "duplicate"),
    ("rule to unknown task", lambda r: r["routing"]["rules"].append({"if": "has_code", "task": "nope"}),
     "routing.rules.3.task", "unknown task"),
    ("unknown default profile", lambda r: r["routing"].update(default_profile="x"),
     "routing.default_profile", "undefined profile"),
    ("unknown embedding variant", lambda r: r["models"]["smollm2"].update(embedding_variants=["fast", "embed"]),
     "models.smollm2.embedding_variants.1", "unknown variant 'embed'"),
    ("unknown scheduling", lambda r: r["models"]["smollm2"]["variants"]["fast"].update(scheduling="lifo"),
     "models.smollm2.variants.fast.scheduling", "'fcfs' or 'priority'"),
    ("autoscaling: unknown autoscaler", lambda r: r["models"]["smollm2"].update(autoscaling={"autoscaler": "vpa"}),
     "models.smollm2.autoscaling.autoscaler", "'hpa' or 'keda'"),
    ("autoscaling: floor of an unknown variant",
     lambda r: r["models"]["smollm2"].update(autoscaling={"min_replicas": {"turbo": 1}}),
     "models.smollm2.autoscaling.min_replicas.turbo", "unknown variant"),
    ("autoscaling: rate window under a scrape",
     lambda r: r["models"]["smollm2"].update(autoscaling={"scrape_interval_s": 30, "rate_window_s": 10}),
     "models.smollm2.autoscaling.rate_window_s", "shorter than scrape_interval_s"),
    ("autoscaling: utilisation of an unknown variant",
     lambda r: r["models"]["smollm2"].update(autoscaling={"utilisation_by_variant": {"turbo": 0.5}}),
     "models.smollm2.autoscaling.utilisation_by_variant.turbo", "unknown variant"),
    ("autoscaling: capacity curve of an unknown variant", lambda r: r["models"]["smollm2"].update(autoscaling={"capacity_by_variant": {"turbo": {"intercept": 0.5, "per_busy_replica": 12}}}), "models.smollm2.autoscaling.capacity_by_variant.turbo", "unknown variant"),  # noqa: E501
    ("autoscaling: capacity curve falling with the load", lambda r: r["models"]["smollm2"].update(autoscaling={"capacity_by_variant": {"fast": {"intercept": 0.5, "per_busy_replica": -1}}}), "models.smollm2.autoscaling.capacity_by_variant.fast.per_busy_replica", ""),  # noqa: E501
    ("autoscaling: warm task not configured", lambda r: r["models"]["smollm2"].update(autoscaling={"warm_tasks": ["chat", "poetry"]}), "models.smollm2.autoscaling.warm_tasks.1", "unknown task 'poetry'"),  # noqa: E501
    ("autoscaling: floor above the ceiling",
     lambda r: r["models"]["smollm2"].update(autoscaling={"max_replicas": 2, "min_replicas": {"fast": 3}}),
     "models.smollm2.autoscaling.min_replicas.fast", "above max_replicas"),
    ("autoscaling: schedule of an unknown variant", lambda r: r["models"]["smollm2"].update(autoscaling={"schedule_by_variant": {"turbo": [{"at": "08:00", "replicas": 1}]}}), "models.smollm2.autoscaling.schedule_by_variant.turbo", "unknown variant"),  # noqa: E501
    ("autoscaling: schedule steps out of order", lambda r: r["models"]["smollm2"].update(autoscaling={"schedule_by_variant": {"fast": [{"at": "08:00", "replicas": 1}, {"at": "07:30", "replicas": 2}]}}), "models.smollm2.autoscaling.schedule_by_variant.fast.1.at", "not after"),  # noqa: E501
    ("autoscaling: schedule above the ceiling", lambda r: r["models"]["smollm2"].update(autoscaling={"max_replicas": 2, "schedule_by_variant": {"fast": [{"at": "08:00", "replicas": 3}]}}), "models.smollm2.autoscaling.schedule_by_variant.fast.0.replicas", "above max_replicas"),  # noqa: E501
    ("autoscaling: schedule time not a time", lambda r: r["models"]["smollm2"].update(autoscaling={"schedule_by_variant": {"fast": [{"at": "25:00", "replicas": 1}]}}), "models.smollm2.autoscaling.schedule_by_variant.fast.0.at", ""),  # noqa: E501
    ("autoscaling: schedule step unknown key", lambda r: r["models"]["smollm2"].update(autoscaling={"schedule_by_variant": {"fast": [{"at": "08:00", "replicas": 1, "until": "09:00"}]}}), "models.smollm2.autoscaling.schedule_by_variant.fast.0.until", "unknown key"),  # noqa: E501
    ("duplicate served name", lambda r: r["models"]["smollm2"]["variants"]["fast"].update(served_model_name="smollm2-standard"),
     "models.smollm2.variants.fast.served_model_name", "also used"),
]


@pytest.mark.parametrize(("name", "edit", "path", "words"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_invalid_configs_name_the_path(name, edit, path, words):
    error = error_of(edit)
    assert error.path == path
    assert words in str(error)


def test_not_yaml_and_not_a_mapping():
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_config("models: [unclosed")
    with pytest.raises(ConfigError, match="mapping"):
        parse_config("- a\n- b\n")


def test_pins_and_replica_ids():
    config = load_config(DEMO)
    model = config.models["smollm2"]
    assert model.pins == {"smollm2:standard": "standard", "smollm2:fast": "fast"}
    assert [r.id for r in model.replicas] == ["smollm2/standard/0", "smollm2/fast/0"]
    # What the fast-int4 parity report allows (docs/parity-real/fast-int4): chat and coding were refused.
    assert config.models["smollm2"].variants["fast"].allowed_tasks == frozenset({"agent", "extraction"})


def test_alias_pins_when_variants_have_other_names():
    def rename(raw):
        variants = raw["models"]["smollm2"]["variants"]
        variants["bf16"] = variants.pop("standard")
        variants["int8"] = variants.pop("fast")
    model = parse_config(demo_with(rename)).models["smollm2"]
    assert model.pins["smollm2:standard"] == "bf16" and model.pins["smollm2:fast"] == "int8"
    assert model.pins["smollm2:int8"] == "int8"


def test_replica_url_keeps_base_only():
    def v1(raw):
        raw["models"]["smollm2"]["variants"]["fast"]["replicas"] = [{"url": "http://10.0.0.1:8000/v1/"}]
    assert parse_config(demo_with(v1)).models["smollm2"].replicas[1].url == "http://10.0.0.1:8000"


def test_scheduling_is_fcfs_unless_a_variant_says_priority():
    from gateway.domain import Scheduling

    config = parse_config(demo_with(lambda r: r["models"]["smollm2"]["variants"]["fast"].pop("scheduling")))
    variants = config.models["smollm2"].variants
    assert (variants["standard"].scheduling, variants["fast"].scheduling) == (Scheduling.PRIORITY, Scheduling.FCFS)


def test_a_variant_priced_by_its_replica_cost_gets_the_chargeback_of_its_speed():
    def hourly(raw):
        fast = raw["models"]["smollm2"]["variants"]["fast"]
        del fast["price"]
        fast["replica_cost"] = {"gpus": 4, "usd_per_gpu_hour": 3.0}

    config = parse_config(demo_with(hourly))
    variant = config.models["smollm2"].variants["fast"]
    assert variant.price == ReplicaCost(4, 3.0).chargeback(variant.speed)
    assert variant.price.input_per_mtok == pytest.approx(12.0 / 3600 / variant.speed.prefill_tokens_per_s * 1e6, rel=1e-3)


@pytest.mark.parametrize("replica_cost", [None, {"gpus": 4, "usd_per_gpu_hour": 3.0}])
def test_a_variant_needs_exactly_one_of_price_and_replica_cost(replica_cost):
    def edit(raw):
        fast = raw["models"]["smollm2"]["variants"]["fast"]
        if replica_cost is None:
            del fast["price"]
        else:
            fast["replica_cost"] = replica_cost

    error = error_of(edit)
    assert error.path == "models.smollm2.variants.fast"
    assert "price" in str(error) and "replica_cost" in str(error)


def test_autoscaling_is_off_unless_configured_and_read_when_it_is():
    assert parse_config(demo_with(lambda r: None)).models["smollm2"].autoscaling is None
    config = parse_config(demo_with(lambda r: r["models"]["smollm2"].update(
        autoscaling={"autoscaler": "keda", "utilisation": 0.6, "min_replicas": {"standard": 2}})))
    autoscaling = config.models["smollm2"].autoscaling
    assert autoscaling is not None
    assert (autoscaling.autoscaler, autoscaling.utilisation, dict(autoscaling.min_replicas)) == ("keda", 0.6, {"standard": 2})
    assert (autoscaling.scrape_interval_s, autoscaling.scale_down_stabilization_s) == (15.0, 300.0)
    assert dict(autoscaling.capacity_by_variant) == {}
    curved = parse_config(demo_with(lambda r: r["models"]["smollm2"].update(
        autoscaling={"capacity_by_variant": {"fast": {"intercept": 0.6, "per_busy_replica": 18.5}}})))
    curves = curved.models["smollm2"].autoscaling.capacity_by_variant  # type: ignore[union-attr]
    assert curves["fast"].intercept == 0.6 and curves["fast"].replicas(0.1) == 3
    assert curved.models["smollm2"].autoscaling.warm_tasks is None  # type: ignore[union-attr]
    scheduled = parse_config(demo_with(lambda r: r["models"]["smollm2"].update(autoscaling={"schedule_by_variant": {
        "fast": [{"at": "07:30", "replicas": 3}, {"at": "20:00:30", "replicas": 1}]}})))
    schedule = scheduled.models["smollm2"].autoscaling.schedule_by_variant["fast"]  # type: ignore[union-attr]
    assert [(s.at_s, s.replicas) for s in schedule.steps] == [(27000.0, 3), (72030.0, 1)]
    assert schedule.at(3600.0) == 1 and schedule.at(8 * 3600.0) == 3
