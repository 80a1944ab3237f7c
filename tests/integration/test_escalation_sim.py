"""Validate, then escalate, end to end: a fast simulator scripted to write broken tool-call JSON
behind the gateway, a standard one that writes it right. The broken answer never reaches the
client while the budget has room; when it has none the fast answer goes out, and says so. The
Responses and Messages APIs are checked the same way, each in its own request and answer shape."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .cluster import Cluster, cluster

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}}
BROKEN = "What is the weather in Oslo?"  # the fast replica's arguments are cut off
# What vLLM's Hermes parser gives back for the fast replica's call: the markup, as text.
LEFT_AS_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}\n</tool_call>'
FINE = "What is the weather in Paris?"  # both replicas answer it right


def script(path: Path, broken: bool) -> Path:
    oslo = '{"city": "Oslo"' if broken else {"city": "Oslo"}
    path.write_text(json.dumps({"rules": [
        {"equals": BROKEN, "tool_call": {"name": "get_weather", "arguments": oslo}},
        {"equals": FINE, "tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    ]}))
    return path


def standard_as_fast_as_fast(raw: dict[str, Any]) -> None:
    """The standard predicted as fast as the fast variant (still dearer, so the router picks fast):
    its prediction then fits what a request's budget has left after the fast answer."""
    variants = raw["models"]["smollm2"]["variants"]
    variants["standard"]["speed"] = dict(variants["fast"]["speed"])
    variants["fast"]["allowed_tasks"] = ["agent"]


def standard_too_slow(raw: dict[str, Any]) -> None:
    """The standard predicted at 1 prompt token per second: no budget fits it."""
    raw["models"]["smollm2"]["variants"]["standard"]["speed"]["prefill_tokens_per_s"] = 1.0
    raw["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"] = ["agent"]


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("scripts")
    return {"standard": script(tmp / "standard.json", broken=False), "fast": script(tmp / "fast.json", broken=True)}


def profiles(scripts: dict[str, Path]) -> dict[str, tuple[str, ...]]:
    return {v: ("fast-test", "--time-scale", "20", "--answers", str(p)) for v, p in scripts.items()}


@pytest.fixture(scope="module")
def roomy(tmp_path_factory: pytest.TempPathFactory, scripts: dict[str, Path]) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("roomy"), profiles(scripts), edit=standard_as_fast_as_fast) as c:
        yield c


def ask(c: Cluster, content: str, **extra: Any) -> httpx.Response:
    # Each request its own conversation: a session keeps the variant its first turn was served by.
    headers = {"x-session-id": uuid.uuid4().hex, **extra.pop("headers", {})}
    body = {"model": "smollm2", "messages": [{"role": "user", "content": content}], "tools": [WEATHER],
            "max_tokens": 64, **extra}
    return httpx.post(c.url + "/v1/chat/completions", json=body, headers=headers, timeout=30)


def call_arguments(response: httpx.Response) -> str:
    """The call's arguments; for a call vLLM's Hermes parser could not read (broken JSON), the
    markup it left in the text."""
    message = response.json()["choices"][0]["message"]
    if not message.get("tool_calls"):
        return str(message["content"])
    (call,) = message["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    return str(call["function"]["arguments"])


def escalations(c: Cluster) -> dict[str, float]:
    lines = httpx.get(c.url + "/metrics").text.splitlines()
    return {line.split(" ")[0]: float(line.split(" ")[1]) for line in lines if line.startswith("duet_escalations_total{")}


def test_a_broken_tool_call_comes_back_valid_from_the_standard(roomy: Cluster) -> None:
    response = ask(roomy, BROKEN)
    assert response.status_code == 200
    assert response.headers["x-duet-variant"] == "standard"
    assert response.headers["x-duet-escalated"] == "invalid-tool-arguments"
    assert json.loads(call_arguments(response)) == {"city": "Oslo"}
    key = 'duet_escalations_total{action="escalated",model="smollm2",reason="invalid-tool-arguments",task="agent"}'
    assert escalations(roomy)[key] >= 1


def test_a_valid_fast_answer_goes_out_as_it_is(roomy: Cluster) -> None:
    response = ask(roomy, FINE)
    assert response.headers["x-duet-variant"] == "fast"
    assert "x-duet-escalated" not in response.headers and "x-duet-contract-violation" not in response.headers
    assert json.loads(call_arguments(response)) == {"city": "Paris"}


def test_a_pinned_fast_request_is_never_escalated(roomy: Cluster) -> None:
    response = ask(roomy, BROKEN, model="smollm2:fast")
    assert response.headers["x-duet-variant"] == "fast" and "x-duet-escalated" not in response.headers
    assert call_arguments(response) == LEFT_AS_TEXT


def sse_tool_arguments(text: str) -> tuple[str, list[str]]:
    """The tool call's arguments a stream carries, and its data lines."""
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    arguments = ""
    for chunk in (json.loads(d) for d in data if d != "[DONE]"):
        for choice in chunk["choices"]:
            for call in choice["delta"].get("tool_calls", []):
                arguments += call.get("function", {}).get("arguments", "")
    return arguments, data


def test_an_opted_in_stream_is_checked_and_sent_as_a_stream(roomy: Cluster) -> None:
    response = ask(roomy, BROKEN, stream=True, stream_options={"include_usage": True},
                   headers={"x-duet-validate-stream": "1"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-duet-escalated"] == "invalid-tool-arguments"
    arguments, data = sse_tool_arguments(response.text)
    assert json.loads(arguments) == {"city": "Oslo"}
    assert data[-1] == "[DONE]" and json.loads(data[-2])["usage"]["completion_tokens"] > 0


def test_a_stream_that_did_not_opt_in_is_relayed_untouched(roomy: Cluster) -> None:
    response = ask(roomy, BROKEN, stream=True)
    assert response.headers["x-duet-variant"] == "fast"
    assert "x-duet-escalated" not in response.headers and "x-duet-contract-violation" not in response.headers
    _, data = sse_tool_arguments(response.text)
    assert data[-1] == "[DONE]"


def test_without_budget_for_the_standard_the_fast_answer_goes_out_unchanged(tmp_path: Path,
                                                                            scripts: dict[str, Path]) -> None:
    with cluster(tmp_path, profiles(scripts), edit=standard_too_slow) as c:
        response = ask(c, BROKEN)
        assert response.headers["x-duet-variant"] == "fast"
        assert response.headers["x-duet-contract-violation"] == "invalid-tool-arguments"
        assert response.headers["x-duet-escalation-skipped"] == "kept-no-budget"
        assert call_arguments(response) == LEFT_AS_TEXT
        key = 'duet_escalations_total{action="kept-no-budget",model="smollm2",reason="invalid-tool-arguments",task="agent"}'
        assert escalations(c)[key] == 1


RESPONSES_WEATHER = {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"]}
ANTHROPIC_WEATHER = {"name": "get_weather", "description": "The weather in a city",
                     "input_schema": WEATHER["function"]["parameters"]}


def ask_responses(c: Cluster, content: str) -> httpx.Response:
    body = {"model": "smollm2", "input": content, "tools": [RESPONSES_WEATHER], "max_output_tokens": 64}
    return httpx.post(c.url + "/v1/responses", json=body, headers={"x-session-id": uuid.uuid4().hex}, timeout=30)


def ask_messages(c: Cluster, content: str) -> httpx.Response:
    body = {"model": "smollm2", "max_tokens": 64, "messages": [{"role": "user", "content": content}],
            "tools": [ANTHROPIC_WEATHER]}
    return httpx.post(c.url + "/v1/messages", json=body, headers={"x-session-id": uuid.uuid4().hex}, timeout=30)


def test_a_broken_responses_call_comes_back_valid_from_the_standard(roomy: Cluster) -> None:
    response = ask_responses(roomy, BROKEN)
    assert response.status_code == 200, response.text
    assert (response.headers["x-duet-variant"], response.headers["x-duet-escalated"]) == ("standard",
                                                                                         "invalid-tool-arguments")
    (call,) = [item for item in response.json()["output"] if item["type"] == "function_call"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Oslo"}
    fine = ask_responses(roomy, FINE)
    assert fine.headers["x-duet-variant"] == "fast" and "x-duet-escalated" not in fine.headers


def test_a_broken_messages_call_comes_back_valid_from_the_standard(roomy: Cluster) -> None:
    response = ask_messages(roomy, BROKEN)
    assert response.status_code == 200, response.text
    assert (response.headers["x-duet-variant"], response.headers["x-duet-escalated"]) == ("standard",
                                                                                         "invalid-tool-arguments")
    (use,) = [block for block in response.json()["content"] if block["type"] == "tool_use"]
    assert use["name"] == "get_weather" and use["input"] == {"city": "Oslo"}
    fine = ask_messages(roomy, FINE)
    assert fine.headers["x-duet-variant"] == "fast" and "x-duet-escalated" not in fine.headers
