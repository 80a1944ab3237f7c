"""One choice's output: prose and tool calls, streamed and whole, as vLLM with hermes answers."""

from __future__ import annotations

import json

import pytest

from serving.sim.answers.output import Choice, ToolPlan

ARGS = json.dumps({"city": "example"})


def plan(named: bool = False, required: bool = False) -> ToolPlan:
    return ToolPlan("chatcmpl-tool-7", "get_weather", ARGS, named, required)


def run_stream(choice: Choice, tokens: int) -> list[dict[str, object] | None]:
    """Deltas of one token per engine output; the last ends on EOS when ``tokens`` is natural."""
    natural = choice.natural_tokens() or tokens
    return [choice.chat_delta(1, final=i == natural - 1)[0] for i in range(tokens)]


def test_prose_ends_with_an_empty_eos_delta() -> None:
    choice = Choice(0, None, seed=1)
    deltas = [choice.chat_delta(1, final=False)[0] for _ in range(3)] + [choice.chat_delta(1, final=True)[0]]
    assert all(d is not None and set(d) == {"content"} and d["content"] for d in deltas[:3])
    assert deltas[3] is None  # the caller sends {} with the finish reason
    assert choice.tokens == 4


def test_prose_takes_its_natural_length_from_the_hint() -> None:
    assert Choice(0, None, seed=1).natural_tokens(9) == 9
    assert Choice(0, None, seed=1).natural_tokens() is None


@pytest.mark.parametrize("named, required, content, reason", [
    (True, False, "", "stop"), (False, True, "", "tool_calls"), (False, False, None, "tool_calls"),
])
def test_complete_call_message_and_finish(named: bool, required: bool, content: str | None, reason: str) -> None:
    choice = Choice(0, plan(named, required), seed=1)
    natural = choice.natural_tokens()
    assert natural is not None
    choice.take(natural, final=True)
    message, called = choice.message()
    assert called and message["content"] == content
    assert message["tool_calls"] == [{"id": "chatcmpl-tool-7", "type": "function",
                                      "function": {"name": "get_weather", "arguments": ARGS}}]
    assert choice.finish_reason("stop") == reason


def test_cut_call_is_content_with_no_tool_calls() -> None:
    choice = Choice(0, plan(named=True), seed=1)
    choice.take(10)
    message, called = choice.message()
    assert called is False and "tool_calls" not in message
    assert isinstance(message["content"], str) and message["content"].startswith("<tool_call>")
    assert choice.finish_reason("length") == "length"


def test_streamed_call_reassembles_and_holds_back_markup() -> None:
    choice = Choice(0, plan(), seed=1)
    natural = choice.natural_tokens()
    assert natural is not None
    deltas = run_stream(choice, natural)
    sent = [d for d in deltas if d is not None]
    assert len(sent) < natural  # the tags and the name's first pieces send nothing
    calls = [call for d in sent for call in d["tool_calls"]]  # type: ignore[attr-defined]
    assert calls[0]["function"] == {"name": "get_weather"} and calls[0]["id"] == "chatcmpl-tool-7"
    assert "".join(c["function"].get("arguments", "") for c in calls) == ARGS
    assert all(d["content"] is None for d in sent)  # type: ignore[index]
