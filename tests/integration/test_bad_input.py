"""Bad input is refused, never crashes the gateway: the cases the issues name (schemathesis's generated
requests run with keys on, in test_security.py). The replicas behind
the gateway record what reaches them, so "refused before any replica was tried" is checked, and
every 5xx seen is the gateway's own (the recording replicas only answer 200)."""

from __future__ import annotations

import httpx
import pytest

from .recording_replica import gateway_over_recorders

MESSAGES = [{"role": "user", "content": "hi"}]
ADMIN_KEY = "admin-bad-input"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with gateway_over_recorders(tmp_path_factory.mktemp("bad-input"), env={"DUET_ADMIN_KEY": ADMIN_KEY}) as made:
        yield made


def chat(url: str, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", content=content, headers={"content-type": "application/json", **headers},
                      timeout=30)


def served(replicas) -> int:  # type: ignore[no-untyped-def]
    return sum(len(r.requests) for r in replicas.values())


def test_a_body_over_the_limit_is_413_declared_or_streamed(gateway):
    process, replicas = gateway
    before = served(replicas)
    big = b'{"model": "smollm2", "messages": [{"role": "user", "content": "' + b"x" * (5 * 1024 * 1024) + b'"}]}'
    declared = chat(process.url, big)

    def chunks():  # no content-length: the limit must hold while reading
        for start in range(0, len(big), 65536):
            yield big[start:start + 65536]

    streamed = httpx.post(process.url + "/v1/chat/completions", content=chunks(), timeout=30,
                          headers={"content-type": "application/json"})
    for response in (declared, streamed):
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "request_too_large"
    assert served(replicas) == before


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("deep nesting past the JSON parser's limit", b"[" * 100_000 + b"]" * 100_000),
        ("deep nesting inside a message", b'{"model": "smollm2", "messages": [{"role": "user", "content": '
                                          + b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"}]}"),
        ("invalid UTF-8", b'{"model": "smollm2", "messages": [{"role": "user", "content": "\xff\xfe\xc3"}]}'),
        ("a lone surrogate escape", b'{"model": "smollm2", "messages": [{"role": "user", "content": "\\ud800"}]}'),
        ("not JSON", b"model=smollm2&messages=hi"),
        ("an empty body", b""),
        ("a JSON string", b'"hello"'),
        ("null", b"null"),
    ],
)
def test_malformed_bodies_are_400_before_any_replica(gateway, name, body):
    process, replicas = gateway
    before = served(replicas)
    response = chat(process.url, body)
    assert response.status_code == 400, (name, response.text)
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert served(replicas) == before, name


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model", 7), ("messages", "hi"), ("messages", []), ("messages", [1, 2]), ("stream", "yes"),
        ("max_tokens", "12"), ("max_tokens", 1.5), ("max_tokens", -1), ("max_tokens", 0), ("n", 1000),
        ("stream_options", "x"), ("tools", {"type": "function"}), ("max_completion_tokens", -5),
    ],
)
def test_wrong_types_and_values_are_400_naming_the_field(gateway, field, value):
    process, replicas = gateway
    before = served(replicas)
    body = {"model": "smollm2", "messages": MESSAGES, field: value}
    response = httpx.post(process.url + "/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"].split(".")[0] == field
    assert served(replicas) == before


@pytest.mark.parametrize("max_tokens", [10**9, 2**63 - 1])
def test_huge_max_tokens_is_400_naming_the_context_limit(gateway, max_tokens):
    process, replicas = gateway
    before = served(replicas)
    response = httpx.post(process.url + "/v1/chat/completions", json={"model": "smollm2", "messages": MESSAGES,
                                                                       "max_tokens": max_tokens}, timeout=30)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "context_length_exceeded" and "2048 tokens" in error["message"]
    assert served(replicas) == before


def test_max_tokens_beyond_64_bits_is_400(gateway):
    process, _ = gateway
    response = chat(process.url, b'{"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": '
                    + b"9" * 40 + b"}")
    assert response.status_code == 400


def test_a_prompt_too_long_for_every_replica_is_400_naming_the_limit_before_any_replica(gateway):
    process, replicas = gateway
    before = served(replicas)
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "word " * 12000}]}
    response = httpx.post(process.url + "/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 400
    assert "maximum context length is 2048 tokens" in response.json()["error"]["message"]
    assert served(replicas) == before


def test_unknown_fields_pass_through_to_the_replica_untouched(gateway):
    process, replicas = gateway
    extra = {"top_k": 5, "repetition_penalty": 1.1, "vendor_extension": {"nested": [1, "two", None]}, "seed": 42}
    body = {"model": "smollm2:fast", "messages": MESSAGES, "max_tokens": 3, **extra}
    before = len(replicas["fast"].requests)
    response = httpx.post(process.url + "/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 200
    sent = replicas["fast"].requests[before].json()
    assert {k: sent[k] for k in extra} == extra
    assert sent["model"] == "smollm2-fast" and sent["messages"] == MESSAGES
