"""`duet up`'s config for local replicas takes the committed parity reports' refusals: a task type
the gate refused for a variant on this CPU is not routed to it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.cli.up import DEMO_CONFIG, allowed_tasks_lines, gateway_config, parity_reports, read_policy
from gateway.config import parse_config
from serving.launch import LaunchProfileError, load_profiles
from serving.supervisor import ReplicaLaunch

PROFILES = load_profiles()


def launch(name: str, port: int) -> ReplicaLaunch:
    return ReplicaLaunch(name=name, argv=("true",), env={}, url=f"http://127.0.0.1:{port}", log_path=Path("/dev/null"))


def test_every_committed_report_a_profile_names_is_a_parity_report() -> None:
    named = [p for p in PROFILES.values() if p.parity_report]
    assert {p.variant for p in named} >= {"fast-int8", "fast-int8-compiled", "fast-spec", "fast-bnb4"}
    reports = parity_reports(named)
    for profile in named:
        verdicts = {entry["verdict"] for entry in reports[profile.name]["tasks"].values()}
        assert verdicts <= {"allowed", "not allowed"} and verdicts, profile.name


def test_duet_up_keeps_the_tasks_the_int8_report_refuses_off_fast_int8() -> None:
    profiles = [PROFILES["cpu-smollm2-bf16"], PROFILES["cpu-smollm2-int8"]]
    config = gateway_config(read_policy(DEMO_CONFIG), [launch("standard", 9001), launch("fast-int8", 9002)],
                            profiles, "127.0.0.1", 8000)
    refused = {t for t, e in parity_reports(profiles)["cpu-smollm2-int8"]["tasks"].items() if e["verdict"] != "allowed"}
    assert "chat" in refused  # measured here: docs/parity-real/fast-int8
    allowed = config["models"]["smollm2"]["variants"]["fast-int8"]["allowed_tasks"]
    assert allowed and not refused & set(allowed)
    (line,) = allowed_tasks_lines(config)
    assert line.startswith("fast-int8: allowed tasks ") and "parity report" in line
    parse_config(yaml.safe_dump(config), source="generated")


def test_a_named_report_that_is_missing_stops_duet_up(tmp_path: Path) -> None:
    with pytest.raises(LaunchProfileError, match="parity_report"):
        parity_reports([PROFILES["cpu-smollm2-int8"]], root=tmp_path)
