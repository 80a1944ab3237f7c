from loadtests.load.prompts import synthesizer
from loadtests.load.scenarios import AGENT_TOOLS, ScenarioSettings, agent_first_turn, agent_second_turn, single_turn, slo_headers
from loadtests.load.streaming import ToolCall
from loadtests.scoring.slo import DEFAULT_SLOS, Slo

SETTINGS = ScenarioSettings(model="duet-70b", synthesizer=synthesizer(), slos=dict(DEFAULT_SLOS), time_scale=2.0)


def test_single_turn_tells_only_the_simulator_its_traced_length_and_streams_with_usage():
    request = single_turn(SETTINGS, "coding", 1469, 13, seed=7)
    body = request.body
    assert body["model"] == "duet-70b"
    # Nothing the gateway reads says 13: no max_tokens, min_tokens or ignore_eos (issue #16, no oracle)
    assert not {"max_tokens", "max_completion_tokens", "min_tokens", "ignore_eos"} & set(body)
    assert body["vllm_xargs"] == {"sim_output_tokens": 13}
    assert body["stream"] and body["stream_options"] == {"include_usage": True}
    assert SETTINGS.synthesizer.counter.count_text(body["messages"][0]["content"]) in range(1468, 1471)
    assert request.name == "chat [coding]"


def test_forced_length_forces_the_traced_output_for_every_replica_and_the_gateway():
    forced = ScenarioSettings(model="duet-70b", synthesizer=synthesizer(), slos=dict(DEFAULT_SLOS), forced_length=True)
    body = single_turn(forced, "coding", 500, 13, seed=7).body
    assert (body["max_tokens"], body["min_tokens"], body["ignore_eos"]) == (13, 13, True)
    assert "vllm_xargs" not in body


def test_slo_headers_carry_the_task_and_budgets_in_wall_time():
    expected = {"x-duet-task": "chat", "x-slo-ttft-ms": "1000.000", "x-slo-tpot-ms": "25.000"}
    assert slo_headers("chat", Slo(ttft_ms=2000, tpot_ms=50), 2.0) == expected
    assert slo_headers("chat", None, 1.0) == {"x-duet-task": "chat"}


def test_agent_turns_offer_the_tool_then_feed_its_result_back():
    first = agent_first_turn(SETTINGS, 300, seed=1)
    assert first.body["tools"] == list(AGENT_TOOLS) and first.headers["x-duet-task"] == "agent"
    call = ToolCall("call_9", "search_documents", '{"query": "q"}')
    second = agent_second_turn(SETTINGS, first, (call,), result_tokens=200, output_tokens=50, seed=1)
    roles = [m["role"] for m in second.body["messages"]]
    assert roles == ["user", "assistant", "tool"]
    assert second.body["messages"][1]["tool_calls"][0]["id"] == "call_9"
    assert second.body["messages"][2]["tool_call_id"] == "call_9"
    assert second.body["vllm_xargs"] == {"sim_output_tokens": 50} and second.body["tool_choice"] == "none"
