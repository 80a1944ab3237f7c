"""Reading request bodies: prompt counting, output controls, task hints, vLLM-like refusals."""

from __future__ import annotations

import orjson
import pytest

from serving.sim.dialects.api_request import BadRequest, parse_call
from serving.sim.profile import ChatTemplate

TEMPLATE = ChatTemplate(per_message_tokens=5, generation_prompt_tokens=3, default_system_tokens=19)


def chat(body: dict[str, object], headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return parse_call(orjson.dumps(body), chat=True, headers=headers or {}, template=TEMPLATE)


def test_chat_prompt_counts_content_and_template() -> None:
    call = chat({"messages": [{"role": "user", "content": "x" * 40}]})
    assert call.prompt_tokens == 10 + 5 + 3 + 19  # content + per message + generation prompt + default system
    with_system = chat({"messages": [{"role": "system", "content": "x" * 8}, {"role": "user", "content": "x" * 40}]})
    assert with_system.prompt_tokens == 2 + 10 + 2 * 5 + 3


def test_output_controls_and_stream_options() -> None:
    call = chat({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 9, "min_tokens": 4,
                 "ignore_eos": True, "n": 2, "stream": True,
                 "stream_options": {"include_usage": True, "continuous_usage_stats": True}})
    assert (call.max_tokens, call.min_tokens, call.ignore_eos, call.n) == (9, 4, True, 2)
    assert call.stream and call.include_usage and call.continuous_usage


def test_task_from_header_then_body_then_default() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "vllm_xargs": {"duet_task": "extraction"}}
    assert chat(body, {"x-duet-task": "coding"}).task == "coding"
    assert chat(body).task == "extraction"
    assert chat({"messages": [{"role": "user", "content": "hi"}]}).task == "chat"


def test_prompt_length_hint_and_token_id_prompts() -> None:
    assert chat({"messages": [{"role": "user", "content": "hi"}],
                 "vllm_xargs": {"sim_prompt_tokens": 5000}}).prompt_tokens == 5000
    call = parse_call(orjson.dumps({"prompt": [1, 2, 3, 4, 5]}), chat=False, headers={}, template=TEMPLATE)
    assert call.prompt_tokens == 5 and call.max_tokens == 16  # vLLM's completions default


def test_output_length_hint() -> None:
    hi = [{"role": "user", "content": "hi"}]
    assert chat({"messages": hi, "vllm_xargs": {"sim_output_tokens": 9}}).output_tokens == 9
    assert chat({"messages": hi}).output_tokens is None
    with pytest.raises(BadRequest, match="sim_output_tokens"):
        chat({"messages": hi, "vllm_xargs": {"sim_output_tokens": 0}})


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'{"messages": []}',
                                  b'{"messages": [{"role": "user", "content": "x"}], "n": 0}',
                                  b'{"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}}'])
def test_malformed_bodies_are_refused(body: bytes) -> None:
    with pytest.raises(BadRequest):
        parse_call(body, chat=True, headers={}, template=TEMPLATE)


def test_priority_is_any_int64_as_vllm_reads_it() -> None:
    hi = {"messages": [{"role": "user", "content": "hi"}]}
    assert chat(hi).priority == 0
    assert [chat({**hi, "priority": p}).priority for p in (-3, 0, 7, 2**63 - 1)] == [-3, 0, 7, 2**63 - 1]
    for bad in ("high", 1.5, True, 2**63):
        with pytest.raises(BadRequest) as info:
            chat({**hi, "priority": bad})
        assert info.value.param == "priority"
