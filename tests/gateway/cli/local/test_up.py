"""`duet up`'s config for local replicas takes the committed parity reports' refusals: a task type
the gate refused for a variant on this CPU is not routed to it. A report holds only on the
hardware class it was measured on: elsewhere the variant starts in shadow (pinned requests only).
The machine's class is injected: these tests never depend on the CPU they run on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli.local.evidence import apply_evidence
from gateway.cli.local.up import DEMO_CONFIG, allowed_tasks_lines, gateway_config, parity_reports, read_policy, read_report
from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.config.evidence import unproven
from gateway.config.schema import ConfigFile
from gateway.domain import Health, ReplicaState
from gateway.endpoints import ChatBody, validate_body
from gateway.flow import Inbound, View, plan_request
from quantize.parity.report import hardware_class, with_hardware
from serving.launch import PARITY_ROOT, LaunchProfileError, load_profiles
from serving.launch.local_config import LocalVariant, local_config
from serving.supervisor import ReplicaLaunch

PROFILES = load_profiles()


def launch(name: str, port: int) -> ReplicaLaunch:
    return ReplicaLaunch(name=name, argv=("true",), env={}, url=f"http://127.0.0.1:{port}", log_path=Path("/dev/null"))


def test_every_committed_report_a_profile_names_is_a_parity_report() -> None:
    named = [p for p in PROFILES.values() if p.parity_reports]
    assert {p.variant for p in named} >= {"fast-int8", "fast-int8-compiled", "fast-spec", "fast-bnb4"}
    for profile in named:
        reports = [read_report(profile, PARITY_ROOT / path) for path in profile.parity_reports]
        classes = [hardware_class(report) for report in reports]
        assert len(set(classes)) == len(classes), f"{profile.name}: two reports for one class"
        for report in reports:
            verdicts = {entry["verdict"] for entry in report["tasks"].values()}
            assert verdicts <= {"allowed", "not allowed"} and verdicts, profile.name


def test_duet_up_keeps_the_tasks_the_int8_report_refuses_off_fast_int8() -> None:
    profiles = [PROFILES["cpu-smollm2-bf16"], PROFILES["cpu-smollm2-int8"]]
    config = gateway_config(read_policy(DEMO_CONFIG), [launch("standard", 9001), launch("fast-int8", 9002)],
                            profiles, "127.0.0.1", 8000, machine_class="avx2")  # where it was measured
    refused = {t for t, e in parity_reports(profiles)["cpu-smollm2-int8"]["tasks"].items() if e["verdict"] != "allowed"}
    assert "chat" in refused  # measured here: docs/parity-real/fast-int8
    allowed = config["models"]["smollm2"]["variants"]["fast-int8"]["allowed_tasks"]
    assert allowed and not refused & set(allowed)
    (line,) = allowed_tasks_lines(config)
    assert line.startswith("fast-int8: allowed tasks ") and "parity report" in line
    parse_config(yaml.safe_dump(config), source="generated")


def test_duet_up_applies_the_int8_report_of_its_machines_class() -> None:
    # Coding: allowed by the avx2 run (35% / 35%), refused by the amx one (30% / 40%,
    # docs/parity-real/fast-int8-amx): the same variant routes differently by where it runs.
    profiles = [PROFILES["cpu-smollm2-bf16"], PROFILES["cpu-smollm2-int8"]]
    allowed = {}
    for machine_class in ("avx2", "amx"):
        config = gateway_config(read_policy(DEMO_CONFIG), [launch("standard", 9001), launch("fast-int8", 9002)],
                                profiles, "127.0.0.1", 8000, machine_class=machine_class)
        allowed[machine_class] = set(config["models"]["smollm2"]["variants"]["fast-int8"]["allowed_tasks"])
    assert "coding" in allowed["avx2"] and "coding" not in allowed["amx"]
    assert "chat" not in allowed["avx2"] | allowed["amx"]


def test_a_named_report_that_is_missing_stops_duet_up(tmp_path: Path) -> None:
    with pytest.raises(LaunchProfileError, match="parity_reports"):
        parity_reports([PROFILES["cpu-smollm2-int8"]], root=tmp_path)


COUNT = "Count from 1 to 20, one number per line."
DEFAULT = [PROFILES["cpu-smollm2-bf16"], PROFILES["cpu-smollm2-int4"]]  # duet up's embedded default


def default_config(machine_class: str) -> dict[str, Any]:
    return gateway_config(read_policy(DEMO_CONFIG), [launch("standard", 9001), launch("fast-int4", 9002)], DEFAULT,
                          "127.0.0.1", 8000, machine_class=machine_class)


def served_by(raw: dict[str, Any], model: str, content: str, task: str = "chat") -> str | None:
    """The variant the gateway's own planning picks for one request, every replica up and idle."""
    config = parse_config(yaml.safe_dump(raw), source="generated")
    view = View({r.id: ReplicaState(r.id, health=Health.UP) for r in config.replicas})
    body = validate_body({"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 64}, ChatBody)[1]
    plan = plan_request(ActiveConfig.of(config), Inbound(body, {"x-duet-task": task}), view)
    return plan.decision.variant


def test_the_int4_report_applies_on_the_class_it_was_measured_on_and_chat_stays_on_standard() -> None:
    config = default_config("amx")  # the committed report's class (docs/parity-real/fast-int4)
    fast = config["models"]["smollm2"]["variants"]["fast-int4"]
    assert fast["allowed_tasks"] == ["agent", "extraction"] and "measured on amx" in fast["allowed_tasks_source"]
    assert fast.get("rollout", {}).get("stage", "full") == "full"
    assert served_by(config, "smollm2", COUNT) == "standard"
    assert served_by(config, "smollm2", COUNT, task="extraction") == "fast-int4"
    assert duet_check_problems(config) == []


@pytest.mark.parametrize("machine_class", ["avx512", "avx2"])
def test_without_a_report_for_the_machines_class_int4_starts_in_shadow(machine_class: str) -> None:
    config = default_config(machine_class)
    fast = config["models"]["smollm2"]["variants"]["fast-int4"]
    assert fast["rollout"] == {"stage": "shadow"} and fast["allowed_tasks"] == []
    assert f"no parity report for this machine's hardware class {machine_class}" in fast["allowed_tasks_source"]
    assert "measured on amx" in fast["allowed_tasks_source"]
    for task in ("chat", "extraction", "agent"):
        assert served_by(config, "smollm2", COUNT, task=task) == "standard"
    assert served_by(config, "smollm2:fast-int4", COUNT) == "fast-int4"  # pinned requests still reach it
    (line,) = [line for line in allowed_tasks_lines(config) if line.startswith("fast-int4")]
    assert "starts in shadow, serving only requests pinned to smollm2:fast-int4" in line
    assert duet_check_problems(config) == []


def test_a_report_measured_on_avx512_applies_on_an_avx512_machine() -> None:
    """The same verdicts, as if measured on an AVX-512 CPU without AMX: applied on that class."""
    report = with_hardware(parity_reports(DEFAULT)["cpu-smollm2-int4"],
                           {**parity_reports(DEFAULT)["cpu-smollm2-int4"]["metadata"]["hardware"], "class": "avx512"})
    for machine_class, applies in (("avx512", True), ("amx", False), ("avx2", False)):
        config = local_config(read_policy(DEMO_CONFIG), [LocalVariant(p, f"http://127.0.0.1:{9001 + i}")
                                                         for i, p in enumerate(DEFAULT)], "127.0.0.1", 8000)
        apply_evidence(config, "smollm2", DEFAULT, {"cpu-smollm2-int4": report}, machine_class, read_policy(DEMO_CONFIG))
        fast = config["models"]["smollm2"]["variants"]["fast-int4"]
        assert (fast.get("rollout", {}).get("stage") != "shadow") is applies, machine_class
        assert served_by(config, "smollm2", COUNT) == "standard"


def test_a_variant_whose_report_does_not_say_where_it_was_measured_starts_in_shadow() -> None:
    profiles = [PROFILES["cpu-smollm2-bf16"], PROFILES["cpu-smollm2-ngram"]]
    report = parity_reports(profiles)["cpu-smollm2-ngram"]
    unplaced = {**report, "metadata": {k: v for k, v in report["metadata"].items() if k != "hardware"}}
    config = local_config(read_policy(DEMO_CONFIG), [LocalVariant(p, f"http://127.0.0.1:{9001 + i}")
                                                     for i, p in enumerate(profiles)], "127.0.0.1", 8000)
    apply_evidence(config, "smollm2", profiles, {"cpu-smollm2-ngram": unplaced}, "avx2", read_policy(DEMO_CONFIG))
    fast = config["models"]["smollm2"]["variants"]["fast-spec"]
    assert fast["rollout"] == {"stage": "shadow"} and "does not say where it was measured" in fast["allowed_tasks_source"]


def test_fast_spec_serves_what_its_avx2_report_allows_on_avx2() -> None:
    """The fallback default on AVX2 machines: n-gram speculation, allowed every task type by its report."""
    profiles = [PROFILES["cpu-smollm2-bf16"], PROFILES["cpu-smollm2-ngram"]]
    config = gateway_config(read_policy(DEMO_CONFIG), [launch("standard", 9001), launch("fast-spec", 9002)], profiles,
                            "127.0.0.1", 8000, machine_class="avx2")
    fast = config["models"]["smollm2"]["variants"]["fast-spec"]
    assert fast["allowed_tasks"] == list(config["routing"]["tasks"]) and "rollout" not in fast


def duet_check_problems(raw: dict[str, Any]) -> list[str]:
    return [str(e) for e in unproven(ConfigFile.model_validate(raw))]


def test_every_shipped_parity_report_is_a_real_runs_output_under_docs() -> None:
    """The package ships the verdicts; the run's whole output (items, plot) stays in docs/parity-real/."""
    repo = Path(__file__).resolve().parents[4]
    written = {path.read_bytes() for path in (repo / "docs" / "parity-real").glob("*/parity.json")}
    shipped = sorted((PARITY_ROOT / "parity").glob("*.json"))
    assert shipped and all(path.read_bytes() in written for path in shipped), shipped
