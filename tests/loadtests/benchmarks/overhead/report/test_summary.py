"""What a run prints: added latency, the goals against each peer and twin, the JSON lines, the table."""

from __future__ import annotations

import json

import pytest

from loadtests.benchmarks.overhead.report.summary import added_p50_ms, goals, json_lines, markdown_table
from tests.loadtests.benchmarks.overhead.report.measurements import m


def test_added_latency_is_gateway_p50_minus_direct_p50_in_the_same_mode() -> None:
    runs = [m("direct", "non-stream", 40, 20000), m("direct", "stream", 300, 3000),
            m("duet", "non-stream", 540, 1000), m("duet", "stream", 1300, 500)]
    assert added_p50_ms(runs, runs[2]) == pytest.approx(0.5)
    assert added_p50_ms(runs, runs[3]) == pytest.approx(1.0)
    assert added_p50_ms(runs[2:], runs[2]) is None


def test_goals_compare_duet_with_each_peer_as_issue_3_states() -> None:
    runs = [m("direct", "non-stream", 40, 20000), m("direct", "stream", 300, 3000),
            m("duet", "non-stream", 1540, 1000), m("duet", "stream", 800, 460),
            m("litellm", "non-stream", 30000, 30), m("litellm", "stream", 90000, 10),
            m("vllm-router", "non-stream", 700, 2100), m("vllm-router", "stream", 3000, 500)]
    verdicts = {goal.name: (round(goal.measured or 0, 3), goal.met) for goal in goals(runs)}
    assert verdicts == {
        "duet non-stream: added p50 (ms)": (1.5, False),
        "duet stream: added p50 (ms)": (0.5, True),
        "duet non-stream rps / litellm's": (33.333, True),
        "duet non-stream rps / vllm-router's": (0.476, False),
        "duet stream rps / vllm-router's": (0.92, True),
        "duet responses rps / vllm-router's": (0, None),
        "duet responses-stream rps / vllm-router's": (0, None),
        "duet messages rps / vllm-router's": (0, None),
        "duet messages-stream rps / vllm-router's": (0, None),
    }


def test_responses_rows_get_the_chat_goals_added_p50_and_half_vllm_routers_rate() -> None:
    runs = [m("direct", "responses", 40, 20000), m("direct", "responses-stream", 300, 3000),
            m("duet", "responses", 900, 1000), m("duet", "responses-stream", 1400, 400),
            m("vllm-router", "responses", 500, 2100), m("vllm-router", "responses-stream", 2000, 700)]
    verdicts = {goal.name: (round(goal.measured or 0, 3), goal.met) for goal in goals(runs)}
    assert verdicts["duet responses: added p50 (ms)"] == (0.86, True)
    assert verdicts["duet responses-stream: added p50 (ms)"] == (1.1, False)
    assert verdicts["duet responses rps / vllm-router's"] == (0.476, False)
    assert verdicts["duet responses-stream rps / vllm-router's"] == (0.571, True)


def test_messages_rows_have_the_added_p50_goal_and_say_vllm_router_does_not_serve_them() -> None:
    from loadtests.benchmarks.overhead.report.summary import goals_text

    runs = [m("direct", "messages", 40, 20000), m("duet", "messages", 700, 1000), m("duet", "messages-stream", 900, 400),
            m("direct", "messages-stream", 300, 3000)]
    found = {goal.name: goal for goal in goals(runs)}
    assert found["duet messages: added p50 (ms)"].met is True
    assert found["duet messages-stream: added p50 (ms)"].met is True
    text = goals_text(goals(runs))
    assert "duet messages rps / vllm-router's: — (goal >= 0.5) — vllm-router does not serve /v1/messages" in text


def test_goals_against_a_peer_not_measured_are_neither_met_nor_missed() -> None:
    runs = [m("direct", "non-stream", 40, 20000), m("duet", "non-stream", 540, 1000)]
    by_name = {goal.name: goal for goal in goals(runs)}
    assert by_name["duet non-stream rps / litellm's"].met is None


def test_json_lines_have_exactly_the_issues_keys() -> None:
    line = json.loads(json_lines([m("duet", "stream", 1234, 456.8, errors=2)])[0])
    assert line == {"gateway": "duet", "mode": "stream", "rps": 456.8, "p50_ms": 1.234, "p99_ms": 3.702,
                    "errors": 2}


def test_markdown_table_has_a_row_per_measurement() -> None:
    table = markdown_table([m("direct", "stream", 300, 3000), m("duet", "stream", 800, 460)], ())
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(rows) == 3 and rows[2].startswith("| duet | stream | 460 | 0.800 |")


def test_the_production_path_is_held_to_three_quarters_of_vllm_router_and_to_its_keys_off_twin() -> None:
    from loadtests.benchmarks.overhead.report.summary import production_goals
    runs = [m("duet-production", "non-stream", 900, 1800), m("duet-production", "stream", 900, 700),
            m("duet-production-keys-off", "non-stream", 800, 1900), m("duet-production-keys-off", "stream", 800, 900),
            m("vllm-router", "non-stream", 700, 4000), m("vllm-router", "stream", 800, 900)]
    verdicts = {goal.name: (round(goal.measured or 0, 3), goal.met) for goal in production_goals(runs)}
    assert verdicts == {
        "duet-production non-stream rps / vllm-router's": (0.45, False),
        "duet-production non-stream rps / the same config with keys off": (0.947, True),
        "duet-production stream rps / vllm-router's": (0.778, True),
        "duet-production stream rps / the same config with keys off": (0.778, False),
    }
    assert all(goal.met is None for goal in production_goals(runs[:2]))  # no peer measured: no verdict


def test_duet_is_held_to_its_twin_with_the_task_detector_off_in_the_same_run() -> None:
    from loadtests.benchmarks.overhead.report.summary import detection_goals
    runs = [m("duet", "non-stream", 900, 1900), m("duet", "stream", 900, 700),
            m("duet-detector-off", "non-stream", 800, 2000), m("duet-detector-off", "stream", 800, 800)]
    verdicts = {goal.name: (round(goal.measured or 0, 3), goal.met) for goal in detection_goals(runs)}
    assert verdicts == {
        "duet non-stream rps / the same config with the task detector off": (0.95, True),
        "duet stream rps / the same config with the task detector off": (0.875, False),
    }
    assert all(goal.met is None for goal in detection_goals(runs[:2]))  # the twin not measured: no verdict
