"""The clients people point at vLLM, pointed at the gateway in front of simulated replicas: the
anthropic SDK (messages, stream, tools), the openai SDK (chat, completions, responses, streams)
and the openai-agents SDK (an agent with a function tool runs to its answer). The simulator
scripts the tool call and the answer (``duet sim --answers``)."""

from __future__ import annotations

import anthropic
import httpx
import pytest
import yaml

from .cluster import cluster

WEATHER_TOOL = {"name": "get_weather", "description": "The weather in a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ANSWERS = {"rules": [
    {"equals": "What is the weather in Paris?", "tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    {"match": "^Sunny", "text": "It is sunny in Paris."},
]}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clients")
    answers = tmp / "answers.yaml"
    answers.write_text(yaml.safe_dump(ANSWERS))
    args = ("fast-test", "--time-scale", "1", "--answers", str(answers))
    with cluster(tmp, {"standard": args, "fast": args}) as c:
        yield c


@pytest.fixture(scope="module")
def claude(demo):
    with anthropic.Anthropic(base_url=demo.url, api_key="unused", max_retries=0, timeout=20) as c:
        yield c


def test_anthropic_message_with_the_client_model_name(claude):
    raw = claude.messages.with_raw_response.create(
        model="smollm2", max_tokens=16, messages=[{"role": "user", "content": "Say hello."}])
    message = raw.parse()
    assert message.model == "smollm2" and message.role == "assistant"
    assert message.content[0].type == "text" and message.content[0].text
    assert message.stop_reason in {"end_turn", "max_tokens"}
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert raw.headers["x-duet-variant"] in {"standard", "fast"}


def test_anthropic_stream_events_in_order(claude):
    with claude.messages.stream(model="smollm2", max_tokens=12, system="Be brief.",
                                messages=[{"role": "user", "content": "Say hello."}]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"content_block_start", "content_block_delta", "content_block_stop", "message_delta"} <= set(kinds)
    assert final.model == "smollm2" and final.content[0].text
    assert final.usage.output_tokens > 0


def test_anthropic_tools_are_an_agent_request_and_the_tool_round_trip_finishes(claude):
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    raw = claude.messages.with_raw_response.create(model="smollm2", max_tokens=64, tools=[WEATHER_TOOL],
                                                   messages=question)
    call = raw.parse()
    assert call.stop_reason == "tool_use"
    use = next(block for block in call.content if block.type == "tool_use")
    assert use.name == "get_weather" and use.input == {"city": "Paris"}
    follow_up = [*question, {"role": "assistant", "content": [use.model_dump(include={"type", "id", "name", "input"})]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny, 24 C"}]}]
    # The tool result is what the script matches on: the scripted answer ends the turn.
    follow_up[-1]["content"].append({"type": "text", "text": "Sunny, 24 C"})
    answer = claude.messages.create(model="smollm2", max_tokens=64, tools=[WEATHER_TOOL], messages=follow_up)
    assert answer.content[0].text == "It is sunny in Paris."


def test_anthropic_streamed_tool_use(claude):
    with claude.messages.stream(model="smollm2", max_tokens=64, tools=[WEATHER_TOOL],
                                messages=[{"role": "user", "content": "What is the weather in Paris?"}]) as stream:
        final = stream.get_final_message()
    use = next(block for block in final.content if block.type == "tool_use")
    assert use.input == {"city": "Paris"} and final.stop_reason == "tool_use"


def test_messages_with_tools_are_classified_as_agent(demo, claude):
    claude.messages.create(model="smollm2", max_tokens=8, tools=[WEATHER_TOOL],
                           messages=[{"role": "user", "content": "Which tool would you use?"}])
    metrics = httpx.get(demo.url + "/metrics").text.splitlines()
    assert any(line.startswith("duet_requests_total{") and 'task="agent"' in line for line in metrics)
