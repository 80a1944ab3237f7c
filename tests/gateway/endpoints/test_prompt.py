"""A body's prompt view: its texts (what the count and the rules read) and its parts in the
model's order (what the prefix blocks are cut from), read in one walk of the messages."""

from __future__ import annotations

from typing import Any

from gateway.endpoints import ChatBody, CompletionBody, EmbeddingsBody, MessagesBody, ResponsesBody, validate_body
from gateway.endpoints.prompt import NO_PROMPT, message_texts

TOOLS = [{"type": "function", "function": {"name": "f"}}]


def body(schema: Any, **fields: Any) -> Any:
    return validate_body({"model": "m", **fields}, schema)[1]


def test_a_chat_reads_tools_then_each_role_and_text_in_order():
    chat = body(ChatBody, messages=[{"role": "system", "content": "be brief"},
                                    {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]}],
                tools=TOOLS)
    view = chat.prompt_view()
    assert view.parts == ('[{"type":"function","function":{"name":"f"}}]', "system", "be brief", "user", "hi")
    assert view.texts == ("be brief", "hi") and view.messages == 2 and view.tools == view.parts[0]


def test_a_tool_call_is_read_as_its_json_after_its_text():
    calls = [{"id": "1", "function": {"name": "f", "arguments": "{}"}}]
    view = body(ChatBody, messages=[{"role": "assistant", "content": "ok", "tool_calls": calls}]).prompt_view()
    assert view.texts == ("ok", '[{"id":"1","function":{"name":"f","arguments":"{}"}}]') == tuple(message_texts(
        [{"role": "assistant", "content": "ok", "tool_calls": calls}]))
    assert view.parts == ("assistant", *view.texts) and view.tools is None


def test_anthropics_system_prompt_is_part_of_the_prompt_but_not_of_the_messages_texts():
    view = body(MessagesBody, max_tokens=5, system="be brief", messages=[{"role": "user", "content": "hi"}]).prompt_view()
    assert view.parts == ("be brief", "user", "hi") and view.texts == ("hi",)


def test_the_responses_apis_input_is_read_as_chat_messages():
    view = body(ResponsesBody, instructions="be brief", input="hi").prompt_view()
    assert view.parts == ("system", "be brief", "user", "hi") and view.messages == 2


def test_a_prompt_is_its_strings_and_only_a_single_string_is_cut_into_blocks():
    assert body(CompletionBody, prompt="once upon").prompt_view().parts == ("once upon",)
    batch = body(CompletionBody, prompt=["a", [1, 2], "b"]).prompt_view()
    assert batch.texts == ("a", "b") and batch.parts == ()
    embedding = body(EmbeddingsBody, input="embed me").prompt_view()
    assert embedding.texts == ("embed me",) and embedding.parts == ()
    assert NO_PROMPT.texts == NO_PROMPT.parts == () and NO_PROMPT.messages == 0
