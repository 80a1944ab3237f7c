"""Hermes tool-call markup: its token pieces, the streaming parse and the full parse."""

from __future__ import annotations

import json

from serving.sim.answers.hermes import StreamParser, markup, parse, token_pieces

ARGS = json.dumps({"city": "Paris", "unit": "celsius"})
CALL = markup("get_weather", ARGS)


def stream(pieces: list[str]) -> list[dict[str, object]]:
    parser = StreamParser("chatcmpl-tool-1")
    return [delta for piece in pieces for delta in parser.feed(piece)]


def test_pieces_join_back_and_count_like_a_bpe_tokenizer() -> None:
    pieces = token_pieces(CALL)
    assert "".join(pieces) == CALL
    # SmolLM2's tokenizer cuts the captured call (city "example") into 37 tokens.
    captured = markup("get_weather", json.dumps({"city": "example", "unit": "celsius"}))
    assert 33 <= len(token_pieces(captured)) <= 41


def test_stream_sends_the_name_once_complete_then_argument_text() -> None:
    deltas = stream(token_pieces(CALL))
    assert deltas[0] == {"id": "chatcmpl-tool-1", "type": "function", "index": 0, "function": {"name": "get_weather"}}
    assert all(set(d) == {"index", "function"} for d in deltas[1:])
    assert "".join(str(d["function"]["arguments"]) for d in deltas[1:]) == ARGS  # type: ignore[index]


def test_stream_sends_nothing_before_the_name_is_complete() -> None:
    assert stream(['<tool_call>\n{"name": "get_wea']) == []
    assert stream(["<tool_", "call>"]) == []


def test_cut_stream_has_sent_the_arguments_that_arrived() -> None:
    deltas = stream(token_pieces(CALL)[:20])
    sent = "".join(str(d["function"].get("arguments", "")) for d in deltas)  # type: ignore[union-attr]
    assert deltas[0]["function"] == {"name": "get_weather"} and sent and ARGS.startswith(sent)


def test_full_parse_reads_a_complete_call_and_refuses_a_cut_one() -> None:
    call = parse(CALL)
    assert call is not None and (call.name, json.loads(call.arguments)) == ("get_weather", json.loads(ARGS))
    assert parse(CALL[: len(CALL) // 2]) is None
    assert parse("Just text.") is None
    assert parse(CALL.removesuffix("</tool_call>")) is not None  # the closing tag may be missing
