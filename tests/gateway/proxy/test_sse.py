import orjson
import pytest

from gateway.proxy.sse import (
    DONE,
    EventSplitter,
    ModelRewrite,
    error_event,
    has_done,
    is_usage_only,
    split_events,
    usage_of,
    usage_position,
)


@pytest.mark.parametrize(
    ("chunks", "events"),
    [
        ([b"data: a\n\n"], [b"data: a\n\n"]),
        ([b"data: a\n\nda", b"ta: b\n", b"\n"], [b"data: a\n\n", b"data: b\n\n"]),
        ([b"data: a", b"\n\ndata: b\n\ndata: [DONE]\n\n"], [b"data: a\n\n", b"data: b\n\n", DONE]),
        ([b"data: partial"], []),
    ],
)
def test_splitter_yields_whole_events(chunks, events):
    splitter = EventSplitter()
    out = [e for c in chunks for e in splitter.feed(c)]
    assert out == events


def test_model_rewrite_touches_only_the_model_field():
    rewrite = ModelRewrite.between("smollm2-fast", "smollm2:fast")
    chunk = b'data: {"id":"x","model":"smollm2-fast","choices":[{"delta":{"content":"smollm2-fast"}}]}\n\n'
    out = rewrite.apply(chunk)
    assert orjson.loads(out[6:])["model"] == "smollm2:fast"
    assert b'"content":"smollm2-fast"' in out


def test_usage_chunk_detection_and_parsing():
    usage = b'data: {"id":"x","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}\n\n'
    content = b'data: {"id":"x","choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n'
    assert is_usage_only(usage) and not is_usage_only(content)
    assert usage_of(usage) == (7, 3) and usage_of(content) is None
    assert usage_of(b'{"usage":{"prompt_tokens":1,"completion_tokens":2}}') == (1, 2)


def test_error_event_is_openai_shaped():
    event = error_event("boom")
    assert event.startswith(b"data: ") and event.endswith(b"\n\n")
    assert orjson.loads(event[6:])["error"]["message"] == "boom"


def test_model_rewrite_handles_spaced_json_too():
    rewrite = ModelRewrite.between("smollm2-fast", "smollm2")
    assert orjson.loads(rewrite.apply(b'{"id": "x", "model": "smollm2-fast"}'))["model"] == "smollm2"
    event = rewrite.apply(b'data: {"id": "x", "model": "smollm2-fast"}\n\n')
    assert event.endswith(b"\n\n") and orjson.loads(event[6:])["model"] == "smollm2"
    assert rewrite.apply(DONE) == DONE


@pytest.mark.parametrize(
    ("chunks", "blocks"),
    [
        ([b"data: a\n\n"], [b"data: a\n\n"]),
        ([b"data: a\n\nda", b"ta: b\n", b"\n"], [b"data: a\n\n", b"", b"data: b\n\n"]),
        ([b"data: partial"], [b""]),
    ],
)
def test_complete_returns_whole_events_as_one_block(chunks, blocks):
    splitter = EventSplitter()
    assert [splitter.complete(c) for c in chunks] == blocks
    assert split_events(b"".join(blocks)) == list(EventSplitter().feed(b"".join(chunks)))


def test_done_is_found_only_as_an_event():
    assert has_done(DONE) and has_done(b"data: a\n\n" + DONE)
    assert not has_done(b'data: {"content":"data: [DONE]"}\n\n')


def test_block_rewrite_covers_every_event():
    rewrite = ModelRewrite.between("smollm2-fast", "smollm2")
    block = b'data: {"model":"smollm2-fast","n":1}\n\ndata: {"model":"smollm2-fast","n":2}\n\n' + DONE
    assert rewrite.apply_to_events(block).count(b'"model":"smollm2"') == 2
    spaced = b'data: {"model": "smollm2-fast"}\n\n' + DONE
    out = split_events(rewrite.apply_to_events(spaced))
    assert orjson.loads(out[0][6:])["model"] == "smollm2" and out[1] == DONE


@pytest.mark.parametrize(("data", "position"), [
    (b'{"a":1}', -1), (b'{"usage":null}', -1), (b'{"usage":{"x":1}}', 1), (b'{"usage": {"x":1}}', 1),
    (b'{"usage": {}} {"usage":{}}', 1), (b'{"usage":{}} {"usage": {}}', 1),
])
def test_usage_position(data, position):
    assert usage_position(data) == position
