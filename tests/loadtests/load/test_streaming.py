import orjson
import pytest

from loadtests.load.streaming import read_stream


def event(payload):
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def delta(content=None, tool_calls=None):
    d = {}
    if content is not None:
        d["content"] = content
    if tool_calls is not None:
        d["tool_calls"] = tool_calls
    return {"model": "m-fast", "choices": [{"index": 0, "delta": d}]}


def ticking(times):
    it = iter(times)
    return lambda: next(it)


def test_ttft_ignores_the_role_event_and_itl_follows_content_events():
    body = [
        event({"model": "m-fast", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        event(delta("Hel")), event(delta("lo")), event(delta("!")),
        event({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}) + b"data: [DONE]\n\n",
    ]
    result = read_stream(body, ticking([1.0, 1.5, 1.7, 2.0, 2.1, 2.2, 2.3]), started=0.0)
    assert result.ttft_s == 1.5
    assert result.itl_s == pytest.approx((0.2, 0.3))
    assert (result.output_tokens, result.input_tokens) == (3, 7)
    assert result.text == "Hello!" and result.model == "m-fast" and not result.error


def test_events_split_across_chunks_are_timed_when_complete():
    raw = event(delta("a")) + event(delta("b"))
    chunks = [raw[:10], raw[10:80], raw[80:]]  # each event is 74 bytes
    result = read_stream(chunks, ticking([1.0, 2.0, 3.0, 4.0, 5.0]), started=0.0)
    assert result.ttft_s == 2.0  # the first event's line completes in the second chunk
    assert result.itl_s == (1.0,)
    assert result.output_tokens == 2  # no usage: counted events


def test_tool_call_deltas_are_assembled():
    calls = [
        [{"index": 0, "id": "call_1", "function": {"name": "search_documents", "arguments": '{"qu'}}],
        [{"index": 0, "function": {"arguments": 'ery": "x"}'}}],
    ]
    result = read_stream([event(delta(tool_calls=c)) for c in calls], ticking([1, 2, 3, 4]), started=0.0)
    assert len(result.tool_calls) == 1
    call = result.tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_1", "search_documents", '{"query": "x"}')
    assert result.ttft_s == 1


def test_error_events_are_reported():
    result = read_stream([event({"error": {"message": "replica died"}})], ticking([1, 2, 3]), started=0.0)
    assert result.error == "replica died"
    assert result.ttft_s is None
