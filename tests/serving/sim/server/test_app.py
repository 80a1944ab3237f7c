"""The simulator as a process on loopback, driven by the official ``openai`` SDK and plain HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from serving.sim.profile import PROFILES_DIR
from serving.sim.server.testing import SimProcess

MESSAGES = [{"role": "user", "content": "Say something about the sea."}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1},
                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "days"],
        },
    },
}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with SimProcess("fast-test", "--seed", "3") as process:
        yield process


@pytest.fixture(scope="module")
def client(sim: SimProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{sim.url}/v1", api_key="unused", max_retries=0)


def metric_values(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics, parsed by prometheus_client, keyed by name and labels."""
    text = httpx.get(f"{url}/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_chat_non_stream(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="sim-model", messages=MESSAGES, max_tokens=12,
                                           extra_body={"min_tokens": 12})
    assert reply.id.startswith("chatcmpl-") and reply.object == "chat.completion"
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content and len(reply.choices[0].message.content.split()) >= 6
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage is not None and reply.usage.completion_tokens == 12
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + 12


def test_chat_stream_with_usage(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(
        model="sim-model", messages=MESSAGES, max_tokens=20, stream=True,
        stream_options={"include_usage": True}, extra_body={"ignore_eos": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 20
    assert chunks[-2].choices[0].finish_reason == "length"
    assert [c.choices[0].finish_reason for c in chunks[1:-2]] == [None] * (len(chunks) - 3)
    text = "".join(c.choices[0].delta.content or "" for c in chunks[:-1])
    assert len(text.split()) >= 10


def test_natural_stop_ends_on_an_empty_delta_and_stamps_the_fingerprint(sim: SimProcess) -> None:
    body = {"model": "sim-model", "messages": MESSAGES, "max_tokens": 50, "stream": True,
            "vllm_xargs": {"sim_output_tokens": 5}}
    raw = httpx.post(f"{sim.url}/v1/chat/completions", json=body).text
    chunks = [json.loads(line[len("data: "):]) for line in raw.split("\n\n") if line.startswith("data: {")]
    last = chunks[-1]  # no include_usage: the finish chunk is the last, with the fingerprint
    assert last["choices"][0]["finish_reason"] == "stop" and last["choices"][0]["delta"] == {}
    assert last["system_fingerprint"].startswith("vllm-")
    assert all("system_fingerprint" not in c for c in chunks[:-1])
    assert sum(1 for c in chunks[1:-1] if c["choices"][0]["delta"].get("content")) == 4  # 5 tokens, the last EOS


def test_completions_stream_and_n(client: openai.OpenAI) -> None:
    reply = client.completions.create(model="sim-model", prompt="def f(x):", max_tokens=5, n=3,
                                      extra_body={"ignore_eos": True})
    assert reply.id.startswith("cmpl-") and sorted(c.index for c in reply.choices) == [0, 1, 2]
    assert reply.usage is not None and reply.usage.completion_tokens == 15
    chunks = list(client.completions.create(model="sim-model", prompt="def f(x):", max_tokens=5,
                                            stream=True, extra_body={"ignore_eos": True}))
    assert "".join(c.choices[0].text for c in chunks) and chunks[-1].choices[0].finish_reason == "length"


def test_tool_call_arguments_fit_the_schema(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="sim-model", messages=MESSAGES, tools=[WEATHER],
                                           tool_choice={"type": "function", "function": {"name": "get_weather"}})
    calls = reply.choices[0].message.tool_calls
    assert calls and calls[0].function.name == "get_weather"
    arguments = json.loads(calls[0].function.arguments)
    assert isinstance(arguments["city"], str) and isinstance(arguments["days"], int) and arguments["days"] >= 1
    assert arguments["unit"] in ("celsius", "fahrenheit")
    auto = client.chat.completions.create(model="sim-model", messages=MESSAGES, tools=[WEATHER])
    assert auto.choices[0].finish_reason == "tool_calls"


def test_streamed_tool_call_reassembles(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="sim-model", messages=MESSAGES, tools=[WEATHER], stream=True)
    name, arguments = "", ""
    for chunk in stream:
        for call in chunk.choices[0].delta.tool_calls or []:
            assert call.function is not None
            name += call.function.name or ""
            arguments += call.function.arguments or ""
    assert name == "get_weather" and json.loads(arguments)["city"]


def test_errors_in_vllm_shape(sim: SimProcess, client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="other", messages=MESSAGES)
    with pytest.raises(openai.BadRequestError, match="maximum context length is 4096 tokens"):
        client.completions.create(model="sim-model", prompt="word " * 5000)
    too_many = httpx.post(f"{sim.url}/v1/chat/completions",
                          json={"model": "sim-model", "messages": MESSAGES, "max_tokens": 5000})
    assert too_many.status_code == 400
    assert set(too_many.json()["error"]) == {"message", "type", "param", "code"}


def test_models_tokenize_version_load_health(sim: SimProcess) -> None:
    card = httpx.get(f"{sim.url}/v1/models").json()["data"][0]
    assert (card["id"], card["max_model_len"], card["root"]) == ("sim-model", 4096, "duet/sim-model")
    tokens = httpx.post(f"{sim.url}/tokenize", json={"prompt": "Hello, world! " * 4}).json()
    assert tokens["count"] == len(tokens["tokens"]) == 14
    assert httpx.get(f"{sim.url}/version").json()["version"]
    assert httpx.get(f"{sim.url}/load").json() == {"server_load": 0}
    assert httpx.get(f"{sim.url}/health").status_code == 200


def test_metrics_parse_and_count(sim: SimProcess, client: openai.OpenAI) -> None:
    before = metric_values(sim.url)
    client.chat.completions.create(model="sim-model", messages=MESSAGES, max_tokens=7, extra_body={"ignore_eos": True})
    after = metric_values(sim.url)
    labels = (("engine", "0"), ("model_name", "sim-model"))
    assert after[("vllm:generation_tokens_total", labels)] - before[("vllm:generation_tokens_total", labels)] == 7
    assert (after[("vllm:time_to_first_token_seconds_count", labels)]
            == before[("vllm:time_to_first_token_seconds_count", labels)] + 1)
    success = ("vllm:request_success_total", (labels[0], ("finished_reason", "length"), labels[1]))
    assert after[success] == before.get(success, 0) + 1
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:prompt_tokens_total", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                 "vllm:inter_token_latency_seconds_count", "vllm:e2e_request_latency_seconds_count",
                 "vllm:request_queue_time_seconds_count"):
        assert (name, labels) in after, name


def test_speculative_profile_exports_spec_counters() -> None:
    with SimProcess("cpu-smollm2-ngram", "--time-scale", "50") as sim:
        client = openai.OpenAI(base_url=f"{sim.url}/v1", api_key="unused", max_retries=0)
        client.chat.completions.create(model="smollm2-ngram", messages=MESSAGES, max_tokens=40,
                                       extra_body={"ignore_eos": True}, extra_headers={"x-duet-task": "coding"})
        values = metric_values(sim.url)
    labels = (("engine", "0"), ("model_name", "smollm2-ngram"))
    drafts = values[("vllm:spec_decode_num_draft_tokens_total", labels)]
    accepted = values[("vllm:spec_decode_num_accepted_tokens_total", labels)]
    assert values[("vllm:spec_decode_num_drafts_total", labels)] > 0 and 0 < accepted <= drafts


def test_queue_full_answers_503(tmp_path: Path) -> None:
    profile = (PROFILES_DIR / "fast-test.yaml").read_text()
    profile = profile.replace("max_num_seqs: 256", "max_num_seqs: 2").replace("max_waiting: 4096", "max_waiting: 3")
    (tmp_path / "tiny.yaml").write_text(profile)
    # 100 s steps: however slowly a loaded machine opens the streams, the first step is not over.
    with SimProcess(str(tmp_path / "tiny.yaml"), "--slowdown", "200000") as sim:
        statuses = _statuses_of_streams_held_open(sim.url, 8)
    # The first starts a 100 s step alone; the next three wait for the step to end (bound: 3),
    # and the rest are refused, as an overloaded replica sheds.
    assert statuses == [200] * 4 + [503] * 4


def _statuses_of_streams_held_open(url: str, count: int) -> list[int]:
    """Open ``count`` streams one after the other, keeping each open; their statuses."""
    body = {"model": "sim-model", "messages": MESSAGES, "max_tokens": 50, "stream": True}
    with httpx.Client(timeout=30) as http:
        responses = [http.send(http.build_request("POST", f"{url}/v1/chat/completions", json=body), stream=True)
                     for _ in range(count)]
        for response in responses:
            response.close()
    return [r.status_code for r in responses]


def test_a_tool_result_is_answered_with_words_not_another_call(client: openai.OpenAI) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    messages = [{"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Sunny"}]
    answer = client.chat.completions.create(model="sim-model", messages=messages, tools=tools, max_tokens=8)
    assert answer.choices[0].message.tool_calls is None and answer.choices[0].message.content
