"""Conversations and agent loops: each turn resends the history under one session id."""

from loadtests.load.prompts import synthesizer
from loadtests.load.scenarios import ScenarioSettings
from loadtests.load.sessions import SESSION_HEADER, agent_request, agent_step, answered, ask, start_conversation
from loadtests.load.streaming import ToolCall
from loadtests.scoring.slo import DEFAULT_SLOS

SETTINGS = ScenarioSettings("smollm2", synthesizer(), DEFAULT_SLOS)


def test_each_turn_resends_the_history_as_its_prefix_under_one_session():
    conversation = start_conversation(SETTINGS, "s-1", "chat", 300, seed=1)
    bodies = []
    for turn in range(3):
        conversation = ask(SETTINGS, conversation, 40, seed=10 + turn)
        request = conversation.request(SETTINGS, 20)
        bodies.append(request.body)
        assert request.headers[SESSION_HEADER] == "s-1" and request.headers["x-duet-task"] == "chat"
        conversation = answered(SETTINGS, conversation, 20, seed=20 + turn)
    for earlier, later in zip(bodies, bodies[1:], strict=False):
        assert later["messages"][:len(earlier["messages"])] == earlier["messages"]
        assert len(later["messages"]) == len(earlier["messages"]) + 2  # the answer, the next question
    assert conversation.tokens == 300 + 3 * (40 + 20) and conversation.turns == 3


def test_a_conversation_knows_when_the_next_turn_would_not_fit():
    conversation = start_conversation(SETTINGS, "s", "chat", 1000, seed=1)
    assert conversation.fits(500, 2048)
    assert not conversation.fits(1000, 2048)


def test_an_agent_loop_sends_the_call_and_the_tool_result_back_then_answers():
    conversation = ask(SETTINGS, start_conversation(SETTINGS, "a-1", "agent", 200, seed=1), 30, seed=2)
    first = agent_request(SETTINGS, conversation, 24, final=False)
    assert first.body["tool_choice"] == "auto" and first.body["tools"]
    conversation = agent_step(SETTINGS, conversation, ToolCall("call_9", "search_documents", '{"query": "q"}'), 150, 3)
    conversation = agent_step(SETTINGS, conversation, None, 150, 4)  # no well-formed call: one is made up
    final = agent_request(SETTINGS, conversation, 80, final=True)
    messages = final.body["messages"]
    assert messages[:len(first.body["messages"])] == first.body["messages"]
    assert [m["role"] for m in messages[-4:]] == ["assistant", "tool", "assistant", "tool"]
    assert messages[-4]["tool_calls"][0]["id"] == messages[-3]["tool_call_id"] == "call_9"
    assert final.body["tool_choice"] == "none" and final.headers[SESSION_HEADER] == "a-1"
