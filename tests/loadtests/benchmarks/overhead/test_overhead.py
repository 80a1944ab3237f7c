"""The pure parts of the gateway-overhead benchmark: wrk's result line, added latency, goals,
the docs section, the smoke checks and the backend/gateway configs. Not its performance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from loadtests.benchmarks.overhead.backend import render_canned_lua, render_nginx_conf
from loadtests.benchmarks.overhead.canned import API_KEY, CONTENT_TOKENS, canned_responses, request_body
from loadtests.benchmarks.overhead.duet import REFERENCE_CONFIG, duet_config
from loadtests.benchmarks.overhead.launch import Unavailable
from loadtests.benchmarks.overhead.measure import Measurement
from loadtests.benchmarks.overhead.report import added_p50_ms, goals, json_lines, markdown_table
from loadtests.benchmarks.overhead.smoke import non_stream_problem, stream_problem
from loadtests.benchmarks.overhead.wrk import WrkResult, parse_output, render_script

WRK_STDOUT = """\
Running 10s test @ http://127.0.0.1:8000/v1/chat/completions
  1 threads and 64 connections
Requests/sec:   2261.10
WRK_RESULT {"requests":22611,"duration_us":10000000,"bytes":1,"connect_errors":1,"read_errors":2,"write_errors":0,"status_errors":3,"timeouts":4,"p50_us":784,"p90_us":900,"p99_us":9407,"mean_us":812.5,"max_us":12000}
"""


def wrk(p50_us: float, rps: float, errors: int = 0) -> WrkResult:
    return WrkResult(requests=int(rps * 10), duration_us=10_000_000, errors=errors, p50_us=p50_us,
                     p90_us=p50_us * 2, p99_us=p50_us * 3, mean_us=p50_us, max_us=p50_us * 4)


def m(gateway: str, mode: str, p50_us: float, rps: float, errors: int = 0) -> Measurement:
    return Measurement(gateway, mode, wrk(p50_us, rps, errors), wrk(p50_us * 10, rps), 0.9)


def test_parse_output_reads_the_result_line_and_sums_every_error_kind() -> None:
    result = parse_output(WRK_STDOUT)
    assert result.requests == 22611
    assert result.errors == 1 + 2 + 0 + 3 + 4
    assert result.rps == pytest.approx(2261.1)
    assert (result.p50_ms, result.p99_ms) == (pytest.approx(0.784), pytest.approx(9.407))


def test_parse_output_without_a_result_line_fails_loudly() -> None:
    with pytest.raises(ValueError, match="WRK_RESULT"):
        parse_output("unable to connect to 127.0.0.1:1 Connection refused\n")


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


def test_responses_modes_run_for_direct_duet_and_vllm_router_and_messages_without_vllm_router() -> None:
    from loadtests.benchmarks.overhead.modes import ALL_MODES, CHAT_MODES, RESPONSES_MODES, modes_for

    assert [mode.name for mode in modes_for("duet")] == ["non-stream", "stream", "responses", "responses-stream",
                                                         "messages", "messages-stream"]
    assert modes_for("duet") == modes_for("direct") == ALL_MODES
    assert modes_for("vllm-router") == CHAT_MODES + RESPONSES_MODES
    assert modes_for("litellm") == modes_for("duet-redis") == CHAT_MODES
    assert {mode.path for mode in ALL_MODES if mode.api == "responses"} == {"/v1/responses"}
    assert {mode.path for mode in ALL_MODES if mode.api == "messages"} == {"/v1/messages"}


def test_messages_rows_have_the_added_p50_goal_and_say_vllm_router_does_not_serve_them() -> None:
    from loadtests.benchmarks.overhead.report import goals_text

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


def test_smoke_checks_accept_the_canned_answers_and_catch_damage() -> None:
    canned = canned_responses()
    stream = b"".join(canned.chat_sse_events)
    assert non_stream_problem(canned.chat_json) is None
    assert stream_problem(stream) is None
    assert stream_problem(stream.replace(b"data: [DONE]\n\n", b"")) is not None
    assert stream_problem(stream.replace(CONTENT_TOKENS[3].encode(), b"")) is not None
    assert non_stream_problem(b'{"error": {"message": "no"}}') is not None


def test_stream_is_vllm_shaped_role_tokens_finish_usage_done() -> None:
    events = canned_responses().chat_sse_events
    payloads = [json.loads(e[len(b"data: "):]) for e in events[:-1]]
    assert payloads[0]["choices"][0]["delta"]["role"] == "assistant"
    assert payloads[-2]["choices"][0]["finish_reason"] == "stop"
    assert payloads[-1]["choices"] == [] and payloads[-1]["usage"]["completion_tokens"] == len(CONTENT_TOKENS)
    assert 16 <= len(events) <= 32


def test_lua_long_strings_survive_closing_brackets_in_the_data() -> None:
    lua = render_canned_lua(canned_responses())
    assert lua.count("[[\n") >= 4
    tricky = render_script(b'{"content": "a]]b"}', API_KEY)
    assert "[=[" in tricky and f"Bearer {API_KEY}" in tricky


def test_nginx_conf_keeps_every_path_in_the_run_dir(tmp_path: Path) -> None:
    conf = render_nginx_conf(tmp_path, 18999)
    assert "listen 127.0.0.1:18999" in conf
    for line in conf.splitlines():
        if "_path " in line or line.startswith(("pid ", "error_log ")):
            assert str(tmp_path) in line


def test_request_bodies_ask_for_the_logical_model_and_usage_when_streaming() -> None:
    stream = json.loads(request_body(True))
    assert stream["model"] == "smollm2" and stream["stream"] is True
    assert stream["stream_options"] == {"include_usage": True}
    assert "stream" not in json.loads(request_body(False))


def test_duet_config_keeps_the_reference_policy_with_one_full_variant_on_the_backend() -> None:
    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    config = duet_config(reference, "http://127.0.0.1:18999", "127.0.0.1", 18000)
    variants = config["models"]["smollm2"]["variants"]
    assert len(variants) == 1
    (variant,) = variants.values()
    assert variant["kind"] == "full" and variant["replicas"] == [{"url": "http://127.0.0.1:18999"}]
    assert config["routing"] == reference["routing"]
    assert config["server"]["port"] == 18000


def test_duet_config_for_the_run_is_accepted_by_duets_own_loader() -> None:
    from gateway.config.load import parse_config

    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    config = duet_config(reference, "http://127.0.0.1:18999", "127.0.0.1", 18000)
    parse_config(yaml.safe_dump(config), source="bench-overhead")


def test_the_detector_off_config_differs_from_the_runs_only_in_detection() -> None:
    from gateway.config.load import parse_config
    from loadtests.benchmarks.overhead.duet import CONFIGS

    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    on, off = (parse_config(yaml.safe_dump(CONFIGS[name](reference, "http://127.0.0.1:18999", "127.0.0.1", 18000)))
               for name in ("bench", "bench-detector-off"))
    assert on.policy.detection is not None and off.policy.detection is None
    assert on.models == off.models and on.policy.rules == off.policy.rules


STAT_BEFORE = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0\n"
STAT_AFTER = "cpu  40 0 10 170 0 0 0 0 0 0\ncpu0 35 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 120 0 0 0 0 0 0\n"


def test_busy_fractions_come_per_core_from_proc_stat() -> None:
    from loadtests.benchmarks.overhead.machine import busy_fractions, core_jiffies

    fractions = busy_fractions(core_jiffies(STAT_BEFORE), core_jiffies(STAT_AFTER))
    assert fractions == {"cpu0": pytest.approx(1.0), "cpu1": pytest.approx(0.0)}


def test_the_production_path_has_keys_every_limit_and_two_variants_of_two_replicas(tmp_path: Path) -> None:
    import asyncio
    import hashlib

    from gateway.access.keystore import FileKeyStore
    from gateway.config.load import parse_config
    from loadtests.benchmarks.overhead.canned import API_KEY
    from loadtests.benchmarks.overhead.duet import production_config, write_keys_file

    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    raw = production_config(reference, "http://127.0.0.1:18999", "127.0.0.1", 18000)
    (tmp_path / "duet.yaml").write_text(yaml.safe_dump(raw))
    write_keys_file(tmp_path / "keys.json")
    config = parse_config(yaml.safe_dump(raw), source=str(tmp_path / "duet.yaml"))
    (tier,) = config.access.tiers.values()
    assert config.access.require_keys and None not in (tier.requests_per_min, tier.tokens_per_min, tier.monthly_spend_limit_usd)
    model = config.models["smollm2"]
    assert len(model.variants) == 2 and len(model.replicas) == 4
    assert config.policy == parse_config(REFERENCE_CONFIG.read_text()).policy
    keys = asyncio.run(FileKeyStore(config.access.keys_file).load())
    assert [k.tier for k in keys] == [tier.name]
    assert keys[0].hash == hashlib.sha256(API_KEY.encode()).hexdigest()


FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "vllm_cpu" / "apis"


def _sse_events(body: bytes) -> list[dict[str, object]]:
    return [json.loads(line[len(b"data:"):]) for line in body.splitlines() if line.startswith(b"data:")]


def test_canned_responses_answers_have_the_fields_vllm_032_sends() -> None:
    canned = canned_responses()
    captured = json.loads((FIXTURES / "responses_nonstream.json").read_text())
    answer = json.loads(canned.responses_json)
    assert list(answer) == list(captured)
    assert list(answer["output"][0]) == list(captured["output"][0])
    assert answer["usage"]["output_tokens"] == len(CONTENT_TOKENS)


def test_canned_responses_stream_is_the_event_sequence_vllm_032_sends() -> None:
    """The captured stream's event types and each event's fields, token deltas collapsed to one."""

    def shape(events: list[dict[str, object]]) -> list[tuple[str, frozenset[str]]]:
        kinds = [(str(e["type"]), frozenset(e)) for e in events]
        return [k for i, k in enumerate(kinds) if i == 0 or k[0] != "response.output_text.delta" or kinds[i - 1] != k]

    ours = _sse_events(b"".join(canned_responses().responses_sse_events))
    captured = _sse_events((FIXTURES / "responses_stream.sse").read_bytes())
    assert shape(ours) == shape(captured)
    assert [e["sequence_number"] for e in ours] == list(range(len(ours)))
    assert all(event.startswith(b"event: ") for event in canned_responses().responses_sse_events)


def test_responses_smoke_checks_accept_the_canned_answers_and_catch_damage() -> None:
    from loadtests.benchmarks.overhead.smoke import responses_problem, responses_stream_problem

    canned = canned_responses()
    stream = b"".join(canned.responses_sse_events)
    assert responses_problem(canned.responses_json) is None
    assert responses_stream_problem(stream) is None
    assert responses_stream_problem(b"".join(canned.responses_sse_events[:-1])) is not None
    assert responses_stream_problem(stream.replace(b'"delta":"Paris "', b'"delta":""')) is not None
    assert responses_problem(canned.chat_json) is not None
    assert responses_stream_problem(b"".join(canned.chat_sse_events)) is not None


def test_the_backend_serves_the_responses_api_from_its_own_handler(tmp_path: Path) -> None:
    from loadtests.benchmarks.overhead.backend import RESPONSES_HANDLER_LUA

    assert "location = /v1/responses" in render_nginx_conf(tmp_path, 18999)
    assert "canned.responses_events" in RESPONSES_HANDLER_LUA and "canned.responses_json" in RESPONSES_HANDLER_LUA
    lua = render_canned_lua(canned_responses())
    assert "M.responses_json = " in lua and "response.completed" in lua


def test_responses_request_body_asks_the_logical_model_for_the_same_tokens() -> None:
    from loadtests.benchmarks.overhead.canned import responses_request_body

    stream = json.loads(responses_request_body(True))
    assert stream["model"] == "smollm2" and stream["stream"] is True
    assert stream["max_output_tokens"] == len(CONTENT_TOKENS) and isinstance(stream["input"], str)
    assert "stream" not in json.loads(responses_request_body(False))


def test_the_docs_section_names_the_responses_rows_and_their_goals() -> None:
    from loadtests.benchmarks.overhead.document import section
    from loadtests.benchmarks.overhead.measure import PhasePlan
    from loadtests.benchmarks.overhead.modes import ALL_MODES
    from loadtests.benchmarks.overhead.results import Host, RunRecord
    from loadtests.benchmarks.overhead.run import RunResult

    runs = tuple(m(gateway, mode.name, 500, 1000) for gateway in ("direct", "duet", "vllm-router") for mode in ALL_MODES)
    result = RunResult(runs, (), {mode.name: wrk(100, 5000) for mode in ALL_MODES}, {"nginx": "1.22.1"},
                       {"cpu0": 0.01, "cpu1": 0.02})
    host = Host(2, "Some CPU", "6.1.0", "avx2")
    text = section(RunRecord(result, "make bench-overhead", PhasePlan(), 1, "2026-12-04 12:00 UTC", host))
    assert "| duet | responses-stream | 1000 |" in text and "`POST /v1/responses`" in text
    assert "duet responses rps / vllm-router's: 1.00 (goal >= 0.5) — met" in text
    assert f"{len(canned_responses().responses_sse_events)} SSE events" in text


def test_canned_messages_answers_have_the_shape_vllm_032_sends() -> None:
    canned = canned_responses()
    captured = json.loads((FIXTURES / "messages_nonstream.json").read_text())
    assert list(json.loads(canned.messages_json)) == list(captured)

    def kinds(events: list[dict[str, object]]) -> list[tuple[str, frozenset[str]]]:
        shape = [(str(e["type"]), frozenset(e)) for e in events]
        return [k for i, k in enumerate(shape) if i == 0 or k[0] != "content_block_delta" or shape[i - 1] != k]

    ours = _sse_events(b"".join(canned.messages_sse_events))
    assert kinds(ours) == kinds(_sse_events((FIXTURES / "messages_stream.sse").read_bytes()))
    assert list(ours[0]["message"]) == list(_sse_events((FIXTURES / "messages_stream.sse").read_bytes())[0]["message"])


def test_messages_smoke_checks_accept_the_canned_answers_and_catch_damage(tmp_path: Path) -> None:
    from loadtests.benchmarks.overhead.backend import MESSAGES_HANDLER_LUA
    from loadtests.benchmarks.overhead.canned import messages_request_body
    from loadtests.benchmarks.overhead.smoke import messages_problem, messages_stream_problem

    canned = canned_responses()
    stream = b"".join(canned.messages_sse_events)
    assert messages_problem(canned.messages_json) is None and messages_stream_problem(stream) is None
    assert messages_stream_problem(b"".join(canned.messages_sse_events[:-1])) is not None
    assert messages_stream_problem(stream.replace(b'"text":"Paris "', b'"text":""')) is not None
    assert messages_problem(canned.responses_json) is not None
    assert "location = /v1/messages" in render_nginx_conf(tmp_path, 18999)
    assert "canned.messages_events" in MESSAGES_HANDLER_LUA
    body = json.loads(messages_request_body(True))
    assert body["max_tokens"] == len(CONTENT_TOKENS) and body["stream"] is True and body["messages"]


def test_the_production_path_is_held_to_three_quarters_of_vllm_router_and_to_its_keys_off_twin() -> None:
    from loadtests.benchmarks.overhead.report import production_goals
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
    from loadtests.benchmarks.overhead.report import detection_goals
    runs = [m("duet", "non-stream", 900, 1900), m("duet", "stream", 900, 700),
            m("duet-detector-off", "non-stream", 800, 2000), m("duet-detector-off", "stream", 800, 800)]
    verdicts = {goal.name: (round(goal.measured or 0, 3), goal.met) for goal in detection_goals(runs)}
    assert verdicts == {
        "duet non-stream rps / the same config with the task detector off": (0.95, True),
        "duet stream rps / the same config with the task detector off": (0.875, False),
    }
    assert all(goal.met is None for goal in detection_goals(runs[:2]))  # the twin not measured: no verdict


def test_a_run_record_survives_its_json_file_whole(tmp_path: Path) -> None:
    from loadtests.benchmarks.overhead.measure import PhasePlan
    from loadtests.benchmarks.overhead.results import Host, RunRecord, read, write
    from loadtests.benchmarks.overhead.run import RunResult

    result = RunResult((m("direct", "non-stream", 40, 20000), Measurement("duet", "stream", wrk(800, 460), wrk(900, 400), None)),
                       (Unavailable("litellm", "no venv"),), {"non-stream": wrk(30, 40000)}, {"nginx": "1.22.1"},
                       {"cpu0": 0.01, "cpu1": 0.5})
    record = RunRecord(result, "make bench-overhead", PhasePlan(1.0, 2.0, 3.0, 8, 0), 1, "2026-12-04 12:00 UTC",
                       Host(2, "Some CPU", "6.1.0", "avx512"))
    write(record, tmp_path / "overhead.json")
    assert read(tmp_path / "overhead.json") == record
