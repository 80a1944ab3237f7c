import random

from gateway.detect.training.templates.phrasing import CLOSERS, FOLLOW_UPS, OPENERS, ask, turns


def test_a_request_is_its_body_between_an_opener_and_a_closer():
    for seed in range(20):
        text = ask(random.Random(f"s{seed}"), "Why is the sky blue?")
        opener, closer = text.split("Why is the sky blue?")
        assert opener in OPENERS and closer in CLOSERS


def test_a_conversation_ends_with_a_follow_up_to_the_earlier_answer():
    for seed in range(20):
        messages = turns(random.Random(f"s{seed}"), "first question", "an answer")
        assert [m["role"] for m in messages][-3:] == ["user", "assistant", "user"]
        assert messages[-3]["content"] == "first question" and messages[-1]["content"] in FOLLOW_UPS
