"""The registry: every proxied API once, under its own path, parsed as its module says."""

from __future__ import annotations

import pytest

from gateway.endpoints import ENDPOINTS, ChatBody, TokenizeBody
from gateway.endpoints.messages import MESSAGES_API
from gateway.endpoints.responses import RESPONSES_API
from gateway.proxy.framing import OPENAI

BODIES = {
    "/v1/chat/completions": b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
    "/v1/completions": b'{"model": "m", "prompt": "hi"}',
    "/v1/embeddings": b'{"model": "m", "input": "hi"}',
    "/tokenize": b'{"model": "m", "prompt": "hi"}',
    "/detokenize": b'{"model": "m", "tokens": [1, 2]}',
    "/v1/messages": b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}',
    "/v1/responses": b'{"model": "m", "input": "hi"}',
}


def test_every_endpoint_is_registered_once_under_its_own_path():
    assert list(ENDPOINTS) == list(BODIES)  # the OpenAPI document's order
    assert all(endpoint.path == path for path, endpoint in ENDPOINTS.items())


@pytest.mark.parametrize("path", list(BODIES))
def test_each_endpoint_parses_its_body_as_its_schema(path: str):
    endpoint = ENDPOINTS[path]
    data, body = endpoint.parse(BODIES[path])
    assert isinstance(body, endpoint.schema) and data["model"] == body.model == "m"


def test_tokenize_takes_chat_messages_too_and_only_tokenize_passes_through_untracked():
    _, body = ENDPOINTS["/tokenize"].parse(BODIES["/v1/chat/completions"])
    assert isinstance(body, ChatBody) and ENDPOINTS["/tokenize"].schema is TokenizeBody
    assert {p for p, e in ENDPOINTS.items() if not e.tracked} == {"/tokenize", "/detokenize"}


def test_the_anthropic_and_responses_apis_end_their_streams_their_own_way_and_carry_usage():
    assert MESSAGES_API.framing.ends(b'event: message_stop\ndata: {"type": "message_stop"}\n\n')
    assert RESPONSES_API.framing.ends(b'data: {}\n\nevent: response.incomplete\ndata: {}\n\n')
    assert not MESSAGES_API.framing.ends(b"data: [DONE]\n\n")
    others = [e for e in ENDPOINTS.values() if e not in (MESSAGES_API, RESPONSES_API)]
    assert all(e.framing is OPENAI and e.stream_usage for e in others)
    assert not MESSAGES_API.stream_usage and not RESPONSES_API.stream_usage
