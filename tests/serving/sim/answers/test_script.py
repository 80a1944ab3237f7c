"""Scripted answers: the rules file, and a simulator process that says what the script says
while the engine still counts the tokens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from serving.sim.answers.script import ScriptError, load_script
from serving.sim.server.testing import SimProcess

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
RULES = {"rules": [
    {"equals": "What is 2 + 2?", "text": "Answer: 4"},
    {"match": r"weather in \w+", "tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
    {"match": r"^Say (\w+)", "text": "Scripted hello, with a longer sentence to stream."},
]}


def chat(url: str, content: str, **extra: object) -> dict:  # type: ignore[type-arg]
    body = {"model": "sim-model", "messages": [{"role": "system", "content": "be brief"},
                                               {"role": "user", "content": content}], "temperature": 0, **extra}
    reply = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=20)
    assert reply.status_code == 200, reply.text
    return reply.json()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    path = tmp_path_factory.mktemp("script") / "answers.json"
    path.write_text(json.dumps(RULES))
    with SimProcess("fast-test", "--answers", str(path)) as process:
        yield process


def test_exact_rule_answers_its_text_and_counts_its_tokens(sim: SimProcess) -> None:
    body = chat(sim.url, "What is 2 + 2?")
    assert body["choices"][0]["message"]["content"] == "Answer: 4"
    assert body["choices"][0]["finish_reason"] == "stop"
    # "Answer", ":", " 4" and EOS: the engine generated and counted them.
    assert body["usage"]["completion_tokens"] == 4


def test_max_tokens_still_cuts_a_scripted_answer(sim: SimProcess) -> None:
    body = chat(sim.url, "Say hi", max_tokens=2)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["choices"][0]["message"]["content"] == "Scripted hello"


def test_stream_carries_the_same_text(sim: SimProcess) -> None:
    body = {"model": "sim-model", "messages": [{"role": "user", "content": "Say hello"}], "stream": True}
    with httpx.stream("POST", f"{sim.url}/v1/chat/completions", json=body, timeout=20) as reply:
        lines = [line[6:] for line in reply.iter_lines() if line.startswith("data: ") and line != "data: [DONE]"]
    text = "".join(json.loads(line)["choices"][0]["delta"].get("content") or "" for line in lines)
    assert text == "Scripted hello, with a longer sentence to stream."


def test_scripted_tool_call_when_the_request_offers_tools(sim: SimProcess) -> None:
    message = chat(sim.url, "What is the weather in Lima?", tools=TOOLS)["choices"][0]["message"]
    call = message["tool_calls"][0]["function"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Oslo"}


def test_unmatched_message_gets_generated_words(sim: SimProcess) -> None:
    text = chat(sim.url, "Something else entirely", max_tokens=6)["choices"][0]["message"]["content"]
    assert text and "Scripted" not in text and "Answer: 4" not in text


def test_rules_match_the_last_user_message_only(sim: SimProcess) -> None:
    body = {"model": "sim-model", "max_tokens": 6, "messages": [
        {"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And more?"}]}
    text = httpx.post(f"{sim.url}/v1/chat/completions", json=body, timeout=20).json()["choices"][0]["message"]["content"]
    assert text != "Answer: 4"


@pytest.mark.parametrize(("content", "error"), [
    ("[{text: hi}]", "exactly one of 'equals' or 'match'"),
    ("[{equals: a, text: hi, tool_call: {name: f}}]", "exactly one of 'text' or 'tool_call'"),
    ("[{match: '(', text: hi}]", "rules[0].match"),
    ("[{equals: a, text: hi, colour: red}]", "unknown key"),
    ("{rules: 3}", "list of rules"),
    ("[{equals: a, tool_call: {arguments: {}}}]", "tool_call"),
])
def test_bad_files_are_refused_with_the_rule_named(tmp_path: Path, content: str, error: str) -> None:
    path = tmp_path / "answers.yaml"
    path.write_text(content)
    with pytest.raises(ScriptError, match=error.replace("(", r"\(").replace("[", r"\[")):
        load_script(path)


def test_a_missing_file_stops_the_simulator_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="cannot read answers"):
        SimProcess("fast-test", "--answers", str(tmp_path / "missing.yaml")).start()
