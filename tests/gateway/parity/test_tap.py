"""A tap keeps what a drawn request's client received and gives it back as the chat completion it
adds up to; it refuses an answer that was not a 200, ran past its limit, or is not a completion."""

from __future__ import annotations

import orjson
import pytest

from gateway.parity.sample import Sample
from gateway.parity.tap import AnswerTap

SAMPLE = Sample(None, None, 1.0)  # type: ignore[arg-type]  # the tap only carries it
COMPLETION = {"id": "c", "object": "chat.completion", "model": "smollm2",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "The tide turns."},
                           "finish_reason": "stop"}]}


def stream_of(*words: str) -> list[bytes]:
    chunks = [{"id": "c", "model": "smollm2", "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}
              for w in words]
    return [b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks] + [b"data: [DONE]\n\n"]


def test_a_whole_answer_comes_back_as_sent() -> None:
    tap = AnswerTap(SAMPLE)
    tap.started(200, b"application/json")
    body = orjson.dumps(COMPLETION)
    tap.received(body[:10])
    tap.received(body[10:])
    assert tap.completion() == COMPLETION


def test_a_stream_comes_back_as_the_message_its_pieces_make() -> None:
    tap = AnswerTap(SAMPLE)
    tap.started(200, b"text/event-stream; charset=utf-8")
    for piece in stream_of("The ", "tide ", "turns."):
        tap.received(piece)
    assert tap.completion()["choices"][0]["message"]["content"] == "The tide turns."


@pytest.mark.parametrize("status, limit, why", [(200, 64, "longer than 64 bytes"), (400, 1 << 20, "was a 400")])
def test_an_answer_past_the_limit_or_not_a_200_is_not_scored(status: int, limit: int, why: str) -> None:
    tap = AnswerTap(SAMPLE, limit=limit)
    tap.started(status, b"text/event-stream")
    for piece in stream_of(*["word "] * 20):
        tap.received(piece)
    assert tap.overflowed == (limit == 64)
    with pytest.raises(ValueError, match=why):
        tap.completion()


def test_a_body_that_is_not_a_chat_completion_is_not_scored() -> None:
    tap = AnswerTap(SAMPLE)
    tap.started(200, b"application/json")
    tap.received(b'{"object": "list", "data": []}')
    with pytest.raises(ValueError):
        tap.completion()
