"""The clients people point at vLLM, pointed at the gateway in front of simulated replicas: the
anthropic SDK (messages, stream, tools), the openai SDK (chat, completions, responses, streams),
the openai-agents SDK (an agent with a function tool runs to its answer), langchain-openai and
LiteLLM as a client library (chat, stream, tools, async). The simulator scripts the tool call and
the answer (``duet sim --answers``)."""

from __future__ import annotations

import asyncio
import json

import anthropic
import httpx
import openai
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


@pytest.fixture(scope="module")
def client(demo):
    with openai.OpenAI(base_url=demo.url + "/v1", api_key="unused", max_retries=0, timeout=20) as c:
        yield c


FUNCTION_TOOL = {"type": "function", "name": "get_weather", "description": "The weather in a city",
                 "parameters": WEATHER_TOOL["input_schema"]}


def test_openai_chat_completions_and_streams(client):
    chat = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Say hi."}], max_tokens=8)
    assert chat.model == "smollm2" and chat.choices[0].message.content
    chunks = list(client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Say hi."}],
                                                 max_tokens=8, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    completion = client.completions.create(model="smollm2", prompt="Once upon a time", max_tokens=8)
    assert completion.choices[0].text


def test_openai_response_and_its_stream(client):
    response = client.responses.create(model="smollm2", input="Say hello.", instructions="Be brief.", max_output_tokens=12)
    assert response.model == "smollm2" and response.output_text
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    with client.responses.stream(model="smollm2", input="Say hello.", max_output_tokens=12) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds and final.output_text and final.model == "smollm2"


def test_openai_response_function_tool_stream_and_not(client):
    question = "What is the weather in Paris?"
    response = client.responses.create(model="smollm2", input=question, tools=[FUNCTION_TOOL])
    [call] = [item for item in response.output if item.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    with client.responses.stream(model="smollm2", input=question, tools=[FUNCTION_TOOL]) as stream:
        [streamed] = [item for item in stream.get_final_response().output if item.type == "function_call"]
    assert json.loads(streamed.arguments) == {"city": "Paris"}
    answer = client.responses.create(model="smollm2", tools=[FUNCTION_TOOL], input=[
        {"role": "user", "content": question}, call.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny, 24 C"}])
    assert answer.output_text == "It is sunny in Paris."


def test_previous_response_id_goes_to_the_replica_that_holds_it(client):
    usual = client.responses.with_raw_response.create(model="smollm2", input="Hi.", max_output_tokens=4)
    other = {"standard": "fast", "fast": "standard"}[usual.headers["x-duet-variant"]]
    # The conversation starts where the router would not send it (pinned): only its home can continue it.
    first = client.responses.with_raw_response.create(model=f"smollm2:{other}", input="Remember this.", max_output_tokens=4)
    home = first.headers["x-duet-replica"]
    previous = first.parse().id
    for _ in range(6):
        raw = client.responses.with_raw_response.create(model="smollm2", input="And then?", max_output_tokens=4,
                                                        previous_response_id=previous)
        assert raw.headers["x-duet-replica"] == home
        previous = raw.parse().id


def test_unknown_previous_response_is_the_replicas_404(client):
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="smollm2", input="x", previous_response_id="resp_unknown", max_output_tokens=4)


def test_an_agents_sdk_agent_with_a_function_tool_runs_to_its_answer(demo):
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    called: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        called.append(city)
        return "Sunny, 24 C"

    async def run() -> str:
        async with openai.AsyncOpenAI(base_url=demo.url + "/v1", api_key="unused", max_retries=0) as client:
            agent = Agent(name="weather", instructions="Answer with the weather.", tools=[get_weather],
                          model=OpenAIResponsesModel(model="smollm2", openai_client=client))
            result = await Runner.run(agent, "What is the weather in Paris?")
            return str(result.final_output)

    assert asyncio.run(run()) == "It is sunny in Paris."
    assert called == ["Paris"]


def test_langchain_chat_openai_invoke_stream_and_tools(demo):
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(model="smollm2", base_url=demo.url + "/v1", api_key="unused", max_tokens=8, max_retries=0)
    assert llm.invoke("Say hi.").content
    assert "".join(str(chunk.content) for chunk in llm.stream("Say hi."))
    llm = ChatOpenAI(model="smollm2", base_url=demo.url + "/v1", api_key="unused", max_tokens=64, max_retries=0)
    tools = llm.bind_tools([{"type": "function", "function": {k: v for k, v in FUNCTION_TOOL.items() if k != "type"}}])
    [call] = tools.invoke("What is the weather in Paris?").tool_calls
    assert call["name"] == "get_weather" and call["args"] == {"city": "Paris"}


def test_litellm_completion_stream_tools_and_async(demo, monkeypatch):
    """LiteLLM as a client library (not its proxy): its OpenAI provider pointed at the gateway."""
    # The bundled model-cost map, not a download at import (tests make no outside calls).
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    common = {"model": "openai/smollm2", "api_base": demo.url + "/v1", "api_key": "unused", "num_retries": 0,
              "timeout": 20}
    hi = [{"role": "user", "content": "Say hi."}]
    chat = litellm.completion(messages=hi, max_tokens=8, **common)
    assert chat.choices[0].message.content and chat.usage.completion_tokens > 0
    assert chat._hidden_params["additional_headers"]["llm_provider-x-duet-variant"] in {"standard", "fast"}
    chunks = list(litellm.completion(messages=hi, max_tokens=8, stream=True, **common))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].choices[0].finish_reason in {"stop", "length"}
    tool = {"type": "function", "function": {k: v for k, v in FUNCTION_TOOL.items() if k != "type"}}
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    called = litellm.completion(messages=question, tools=[tool], max_tokens=64, **common)
    [call] = called.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    follow_up = [*question, called.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 24 C"}]

    async def answer() -> str:
        reply = await litellm.acompletion(messages=follow_up, tools=[tool], max_tokens=64, **common)
        return str(reply.choices[0].message.content)

    assert asyncio.run(answer()) == "It is sunny in Paris."
