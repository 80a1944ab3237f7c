"""The config `duet up` writes for local replicas: the demo's policy, one variant per profile, and
it loads as the gateway loads any config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.config import parse_config
from serving.launch import load_profiles
from serving.launch.local_config import LocalVariant, local_config

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
PROFILES = load_profiles()


def variants(*names: str) -> list[LocalVariant]:
    return [LocalVariant(PROFILES[name], f"http://127.0.0.1:{9000 + i}") for i, name in enumerate(names)]


def test_variants_are_named_and_kinded_by_their_profiles_and_point_at_their_replicas() -> None:
    config = local_config(DEMO, variants("cpu-smollm2-bf16", "cpu-smollm2-int4"), "127.0.0.1", 8123)
    section = config["models"]["smollm2"]["variants"]
    assert list(section) == ["standard", "fast-int4"]
    assert section["standard"]["kind"] == "full" and section["fast-int4"]["kind"] == "quantized"
    assert section["fast-int4"]["served_model_name"] == "smollm2-fast-int4"
    assert section["fast-int4"]["replicas"] == [{"url": "http://127.0.0.1:9001"}]
    assert section["fast-int4"]["allowed_tasks"] == DEMO["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"]
    assert "allowed_tasks" not in section["standard"]
    assert config["routing"] == DEMO["routing"] and config["server"]["port"] == 8123
    parse_config(yaml.safe_dump(config), source="generated")


def test_speed_priors_come_from_the_simulator_twins_else_the_demo() -> None:
    from serving.sim.fidelity.prior import speed_prior
    from serving.sim.profile import load_profile

    demo_variants = DEMO["models"]["smollm2"]["variants"]
    config = local_config(DEMO, variants("cpu-smollm2-bf16", "cpu-smollm2-ngram", "cpu-smollm2-bnb4",
                                         "cpu-smollm2-int8-compiled"), "h", 1)
    section = config["models"]["smollm2"]["variants"]
    assert section["standard"]["speed"] == speed_prior(load_profile("cpu-smollm2-bf16"))
    assert section["fast-spec"]["speed"]["tokens_per_step"]["coding"] > 1.0  # the n-gram twin's acceptance
    # bnb4's twin: slower than bf16 here (make bench-variants), and the prior says so
    assert section["fast-bnb4"]["speed"]["decode_s_per_token"] > section["standard"]["speed"]["decode_s_per_token"]
    assert section["fast-int8-compiled"]["speed"] == demo_variants["standard"]["speed"]  # no twin
    parse_config(yaml.safe_dump(config), source="generated")


def test_the_demo_is_not_changed() -> None:
    before = yaml.safe_dump(DEMO)
    local_config(DEMO, variants("cpu-smollm2-bf16"), "h", 1)
    assert yaml.safe_dump(DEMO) == before


def test_a_policy_without_standard_and_fast_is_refused() -> None:
    other = {"models": {"m": {"variants": {"only": {}}}}}
    with pytest.raises(ValueError, match="variants 'standard' and 'fast'"):
        local_config(other, variants("cpu-smollm2-bf16"), "h", 1)


def report(**verdicts: str) -> dict[str, object]:
    """A parity.json with these per-task verdicts."""
    return {"tasks": {task.replace("_", "-"): {"verdict": v} for task, v in verdicts.items()},
            "metadata": {"date": "2026-12-03T10:45:16+00:00"}, "report_sha256": "ab12"}


def test_a_parity_report_takes_the_task_types_it_refuses_off_the_variant() -> None:
    refusing = report(extraction="not allowed", coding="allowed", long_context="not allowed")
    config = local_config(DEMO, variants("cpu-smollm2-bf16", "cpu-smollm2-int8"), "h", 1,
                          {"cpu-smollm2-int8": refusing, "cpu-smollm2-bf16": refusing})
    section = config["models"]["smollm2"]["variants"]
    demo_allowed = DEMO["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"]
    assert "extraction" in demo_allowed
    assert section["fast-int8"]["allowed_tasks"] == [t for t in demo_allowed if t != "extraction"]
    assert section["fast-int8"]["allowed_tasks_source"] == "parity report 2026-12-03T10:45:16+00:00 sha256:ab12 (its refusals)"
    assert "allowed_tasks" not in section["standard"]  # the standard is the reference, never narrowed
    parse_config(yaml.safe_dump(config), source="generated")


def test_a_parity_report_never_widens_the_allowed_task_types() -> None:
    allowing = report(chat="allowed", coding="allowed", reasoning="allowed", long_context="allowed")
    config = local_config(DEMO, variants("cpu-smollm2-bf16", "cpu-smollm2-ngram"), "h", 1, {"cpu-smollm2-ngram": allowing})
    allowed = config["models"]["smollm2"]["variants"]["fast-spec"]["allowed_tasks"]
    assert allowed == DEMO["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"]
    assert "reasoning" not in allowed


def test_a_file_that_is_not_a_parity_report_is_refused() -> None:
    with pytest.raises(ValueError, match="not a duet parity report"):
        local_config(DEMO, variants("cpu-smollm2-bf16", "cpu-smollm2-int8"), "h", 1, {"cpu-smollm2-int8": {"tasks": [1]}})


def test_a_profile_that_schedules_by_priority_makes_its_variant_say_so() -> None:
    import dataclasses

    int4 = PROFILES["cpu-smollm2-int4"]  # every shipped profile schedules by priority: one that does not
    fcfs = dataclasses.replace(int4, engine_args=tuple(a for a in int4.engine_args if a[0] != "scheduling-policy"))
    local = [*variants("cpu-smollm2-bf16"), LocalVariant(fcfs, "http://127.0.0.1:9001")]
    section = local_config(DEMO, local, "127.0.0.1", 8123)["models"]["smollm2"]["variants"]
    assert section["standard"]["scheduling"] == "priority" and "scheduling" not in section["fast-int4"]
    config = parse_config(yaml.safe_dump(local_config(DEMO, local, "127.0.0.1", 8123)), source="generated")
    assert config.models["smollm2"].variants["fast-int4"].scheduling == "fcfs"


def test_local_variants_are_priced_by_replica_time_not_the_demos_list() -> None:
    config = local_config(DEMO, variants("cpu-smollm2-bf16", "cpu-smollm2-ngram"), "h", 1)
    for spec in config["models"]["smollm2"]["variants"].values():
        assert "price" not in spec and spec["replica_cost"] == {"gpus": 1, "usd_per_gpu_hour": 0.05}


def slower_fast_spec(tmp_path: Path) -> Path:
    """The local config of standard + fast-spec with the speeds issue #38 measured on a busy AVX2
    machine: fast-spec slower than standard (decode 123 vs 98 ms/token, prefill 21 vs 33 tok/s)."""
    config = local_config(DEMO, variants("cpu-smollm2-bf16", "cpu-smollm2-ngram"), "127.0.0.1", 1)
    section = config["models"]["smollm2"]["variants"]
    section["standard"]["speed"].update(decode_s_per_token=0.098, prefill_tokens_per_s=33.0)
    section["fast-spec"]["speed"].update(decode_s_per_token=0.123, prefill_tokens_per_s=21.0)
    path = tmp_path / "duet.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_fast_variant_measured_slower_is_dearer_and_not_chosen_as_cheapest(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from gateway.cli import main
    from gateway.config import load_config

    path = slower_fast_spec(tmp_path)
    variants_ = load_config(path).models["smollm2"].variants
    assert variants_["fast-spec"].price.output_per_mtok > variants_["standard"].price.output_per_mtok
    assert variants_["fast-spec"].price.input_per_mtok > variants_["standard"].price.input_per_mtok
    request = tmp_path / "request.json"  # extraction: a task type fast-spec is allowed
    request.write_text(json.dumps({"headers": {"x-duet-task": "extraction"},
                                   "body": {"model": "smollm2", "messages": [{"role": "user", "content": "Name: Ada."}]}}))
    assert main(["explain", "--config", str(path), str(request), "--json"]) == 0
    decision = json.loads(capsys.readouterr().out)["decision"]
    assert decision["variant"] == "standard", decision
