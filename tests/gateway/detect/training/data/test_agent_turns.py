"""Agent requests as a client sends them: tools in the system prompt, then the user's turns with the
calls and results that answered the earlier ones, on a small cache laid out as ``make detector-data``
lays it out."""

from __future__ import annotations

import json

from gateway.detect.training.data import agent_turns
from gateway.detect.training.data.sources import load

CALENDAR = '''
class API:
    description = "base"


class QueryCalendar(API):
    description = "Query for events in a user's calendar."
    parameters = {
        "start_time": {"type": "string", "description": "Start of the window.", "required": True},
        "location": {"type": "string", "description": "Where.", "required": False},
    }
    is_action = False


class CalendarSuite(APISuite):
    name = "Calendar"
    description = "Manage events."
    apis = [QueryCalendar]
'''


def _tooltalk(tmp_path):
    apis = tmp_path / agent_turns.TOOLTALK / "apis"
    apis.mkdir(parents=True)
    (apis / "calendar.py").write_text(CALENDAR)
    data = tmp_path / agent_turns.TOOLTALK / "data"
    (data / "easy").mkdir(parents=True)
    (data / "tooltalk").mkdir()
    conversation = {"suites_used": ["Calendar"], "conversation": [
        {"index": 0, "role": "user", "text": "What is on my calendar today?"},
        {"index": 1, "role": "assistant", "text": "One meeting at ten.", "apis": [
            {"request": {"api_name": "QueryCalendar", "parameters": {"start_time": "2023-09-11 09:00:00"}},
             "response": {"events": [{"name": "Standup"}]}, "exception": None}]},
        {"index": 2, "role": "user", "text": "Thanks!"}]}
    (data / "tooltalk" / "golden_conversation_1.json").write_text(json.dumps(conversation))
    return tmp_path


def test_tooltalk_documents_each_api_as_its_to_openai_doc_does(tmp_path):
    assert agent_turns.tooltalk_suites(_tooltalk(tmp_path)) == {"Calendar": [{
        "name": "QueryCalendar", "description": "Query for events in a user's calendar.",
        "parameters": {"type": "object", "properties": {"start_time": {"type": "string", "description": "Start of the window."},
                                                        "location": {"type": "string", "description": "Where."}}},
        "required": ["start_time"]}]}


def test_each_tooltalk_user_turn_follows_the_calls_results_and_reply_before_it(tmp_path):
    first, second = agent_turns.tooltalk(_tooltalk(tmp_path))
    assert first[0] == "tooltalk/golden_conversation_1/0" and second[0] == "tooltalk/golden_conversation_1/2"
    system, *turns = second[1]
    assert system["role"] == "system" and '"QueryCalendar"' in system["content"]
    assert [m["role"] for m in turns] == ["user", "assistant", "tool", "assistant", "user"]
    call = turns[1]["tool_calls"][0]
    assert call["function"] == {"name": "QueryCalendar", "arguments": '{"start_time": "2023-09-11 09:00:00"}'}
    assert turns[2] == {"role": "tool", "tool_call_id": call["id"], "content": '{"events": [{"name": "Standup"}]}'}
    assert turns[3]["content"] == "One meeting at ten." and turns[4]["content"] == "Thanks!"
    assert first[1] == [system, turns[0]]


def test_a_web_task_is_its_intent_with_the_harness_browser_actions_once_per_intent(tmp_path):
    path = tmp_path / agent_turns.WEBARENA
    path.parent.mkdir(parents=True)
    task = {"task_id": 0, "intent": "What is the top-1 best-selling product in 2022", "sites": ["shopping_admin"]}
    path.write_text(json.dumps([task, {**task, "task_id": 1}, {**task, "task_id": 2, "intent": "Open my latest issue"}]))
    found = load("webarena", tmp_path)
    assert sorted(i.messages[1]["content"] for i in found) == ["Open my latest issue", task["intent"]]
    assert all(i.task == "agent" and '"name": "goto"' in i.messages[0]["content"] for i in found)


def test_timewarp_tasks_get_browsergyms_actions_not_webarenas(tmp_path):
    path = tmp_path / agent_turns.TIMEWARP
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([{"task_id": 1, "intent": "Find the Borough article.", "sites": ["wiki"]}]))
    (item,) = load("timewarp", tmp_path)
    assert '"name": "fill"' in item.messages[0]["content"] and '"name": "type"' not in item.messages[0]["content"]
