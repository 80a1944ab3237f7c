"""Which request kinds run against which gateways."""

from __future__ import annotations


def test_responses_modes_run_for_direct_duet_and_vllm_router_and_messages_without_vllm_router() -> None:
    from loadtests.benchmarks.overhead.measure.modes import ALL_MODES, CHAT_MODES, RESPONSES_MODES, modes_for

    assert [mode.name for mode in modes_for("duet")] == ["non-stream", "stream", "responses", "responses-stream",
                                                         "messages", "messages-stream"]
    assert modes_for("duet") == modes_for("direct") == ALL_MODES
    assert modes_for("vllm-router") == CHAT_MODES + RESPONSES_MODES
    assert modes_for("litellm") == modes_for("duet-redis") == CHAT_MODES
    assert {mode.path for mode in ALL_MODES if mode.api == "responses"} == {"/v1/responses"}
    assert {mode.path for mode in ALL_MODES if mode.api == "messages"} == {"/v1/messages"}
