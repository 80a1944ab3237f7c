"""Parsing a body: JSON objects only, each error an InvalidRequest naming the parameter."""

from __future__ import annotations

import pytest

from gateway.endpoints import ChatBody, parse_any_body, parse_body
from gateway.endpoints.completions import CompletionBody
from gateway.errors import InvalidRequest


@pytest.mark.parametrize(("raw", "param"), [
    (b"{", None),
    (b"[1]", None),
    (b'{"model": "m", "messages": []}', "messages"),
    (b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}', "max_tokens"),
    (b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 129}', "n"),
])
def test_a_bad_body_is_refused_naming_its_parameter(raw: bytes, param: str | None):
    with pytest.raises(InvalidRequest) as refused:
        parse_body(raw, ChatBody)
    assert refused.value.param == param


def test_fields_duet_does_not_read_pass_through_untouched():
    data, body = parse_body(b'{"model": "m", "prompt": "p", "seed": 7, "top_k": 3}', CompletionBody)
    assert data == {"model": "m", "prompt": "p", "seed": 7, "top_k": 3} and body.output_limit() is None


def test_the_dry_run_reads_a_chat_when_it_has_messages_else_a_completion():
    assert isinstance(parse_any_body(b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}')[1], ChatBody)
    assert isinstance(parse_any_body(b'{"model": "m", "prompt": "x"}')[1], CompletionBody)
