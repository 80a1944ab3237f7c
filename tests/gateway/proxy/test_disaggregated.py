"""The proxy's P/D flow against simulated replicas on loopback: prefill then decode answers the
client; a failed prefill, a prefill without handoff and a decode whose KV did not load are
attempt failures (the director's next replica takes the request), never a lost request."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from gateway.domain import EngineConfig, EngineRole, Replica
from gateway.outcome import AttemptFailure
from gateway.proxy.disaggregated import (
    REMOTE_DECODE,
    PlannedCall,
    PrefillThenDecode,
    decode_body,
    handoff_of,
    prefill_body,
    starts_with_error,
)
from gateway.proxy.forward import Answer, UpstreamRequest
from gateway.proxy.http1 import Pool
from serving.sim.server.testing import SimProcess

PROFILE = "cpu-smollm2-bf16"
NIXL = "NixlConnector"
BODY = {"model": "smollm2", "messages": [{"role": "user", "content": "Tell me about the sea. " * 20}],
        "max_tokens": 12, "ignore_eos": True}


def test_the_prefill_body_asks_for_one_unstreamed_token_and_a_remote_decode() -> None:
    body = orjson.loads(prefill_body(orjson.dumps({**BODY, "stream": True, "stream_options": {"include_usage": True},
                                                   "max_completion_tokens": 50})))
    assert body["max_tokens"] == 1 and body["stream"] is False and "stream_options" not in body
    assert "max_completion_tokens" not in body and body["kv_transfer_params"] == REMOTE_DECODE
    assert body["messages"] == BODY["messages"]


def test_the_decode_body_carries_the_handoff_and_keeps_the_clients_request() -> None:
    handoff = {"do_remote_prefill": True, "remote_block_ids": [0, 1]}
    body = orjson.loads(decode_body(orjson.dumps({**BODY, "stream": True}), handoff))
    assert body["kv_transfer_params"] == handoff and body["stream"] is True and body["max_tokens"] == 12


@pytest.mark.parametrize(("answer", "handoff"), [
    (b'{"kv_transfer_params": {"do_remote_prefill": true, "remote_block_ids": [3]}}', {"do_remote_prefill": True,
                                                                                    "remote_block_ids": [3]}),
    (b'{"kv_transfer_params": null}', None),
    (b'{"kv_transfer_params": {"do_remote_prefill": false}}', None),
    (b"not json", None),
    (b"[1, 2]", None),
])
def test_the_handoff_is_read_from_the_prefills_answer(answer: bytes, handoff: dict[str, Any] | None) -> None:
    assert handoff_of(answer) == handoff


def test_an_error_event_first_is_a_failed_stream() -> None:
    assert starts_with_error(b'data: {"error":{"message":"Internal server error","code":500}}\n\n')
    assert not starts_with_error(b'data: {"id":"chatcmpl-1","choices":[{"delta":{"role":"assistant"}}]}\n\n')


def replica(url: str, name: str, role: EngineRole) -> Replica:
    return Replica(f"smollm2/standard/{name}", "smollm2", "standard", url, EngineConfig(role, kv_connector=NIXL))


def upstream(stream: bool) -> UpstreamRequest:
    body = orjson.dumps({**BODY, "stream": stream})
    return UpstreamRequest("/v1/chat/completions", lambda _: body, b"", stream)


async def attempt(prefill: Replica, decode: Replica, stream: bool = False) -> Answer | AttemptFailure:
    pool = Pool(connect_timeout_s=2, idle_timeout_s=20)
    try:
        result = await PrefillThenDecode(pool, upstream(stream), prefill).attempt(decode)
        if isinstance(result, Answer) and result.splitter is not None:
            rest = b""
            while (chunk := await result.response.next_chunk()) is not None:
                rest += chunk
            result.body = result.first_events + rest
            result.response.close()
        return result
    finally:
        pool.close()


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Replica, Replica]]:
    with SimProcess(PROFILE, "--role", "prefill", "--time-scale", "50") as prefill, \
            SimProcess(PROFILE, "--role", "decode", "--time-scale", "50") as decode:
        yield replica(prefill.url, "0", EngineRole.PREFILL), replica(decode.url, "1", EngineRole.DECODE)


@pytest.mark.parametrize("stream", [False, True])
def test_prefill_then_decode_answers_the_client(pair: tuple[Replica, Replica], stream: bool) -> None:
    prefill, decode = pair
    answer = asyncio.run(attempt(prefill, decode, stream))
    assert isinstance(answer, Answer) and answer.status == 200 and answer.replica == decode
    if stream:
        assert answer.body.rstrip().endswith(b"data: [DONE]") and b'"finish_reason":"length"' in answer.body
    else:
        assert orjson.loads(answer.body)["usage"]["completion_tokens"] == 12


def test_a_prefill_replica_that_hands_nothing_off_is_an_attempt_failure(pair: tuple[Replica, Replica]) -> None:
    _, decode = pair
    wrong = replica(decode.url, "9", EngineRole.PREFILL)  # a decode replica asked to prefill refuses: 503
    failure = asyncio.run(attempt(wrong, decode))
    assert isinstance(failure, AttemptFailure) and failure.replica_id == decode.id and failure.status == 503
    assert "prefill on smollm2/standard/9 failed" in failure.detail


def test_an_unreachable_prefill_replica_is_an_attempt_failure(pair: tuple[Replica, Replica]) -> None:
    _, decode = pair
    failure = asyncio.run(attempt(replica("http://127.0.0.1:9", "8", EngineRole.PREFILL), decode))
    assert isinstance(failure, AttemptFailure) and failure.status == 502


@pytest.mark.parametrize("stream", [False, True])
def test_a_decode_whose_kv_did_not_load_is_an_attempt_failure(pair: tuple[Replica, Replica], stream: bool) -> None:
    prefill, _ = pair
    with SimProcess(PROFILE, "--role", "decode", "--time-scale", "50", "--kv-transfer-error-rate", "1") as broken:
        failure = asyncio.run(attempt(prefill, replica(broken.url, "2", EngineRole.DECODE), stream))
    assert isinstance(failure, AttemptFailure) and failure.status == 500


async def planned(replica_tried: Replica, prefill_for: dict[str, Replica]) -> Answer | AttemptFailure:
    pool = Pool(connect_timeout_s=2, idle_timeout_s=20)
    try:
        return await PlannedCall(pool, upstream(False), prefill_for).attempt(replica_tried)
    finally:
        pool.close()


@pytest.mark.parametrize("role", [EngineRole.PREFILL, EngineRole.DECODE])
def test_a_planned_call_never_sends_a_request_whole_to_a_prefill_or_decode_replica(role: EngineRole) -> None:
    """Refused before any byte is sent: an unreachable address would otherwise fail with 502."""
    failure = asyncio.run(planned(replica("http://127.0.0.1:9", "5", role), {}))
    assert isinstance(failure, AttemptFailure) and failure.status == 503 and "cannot serve a request whole" in failure.detail


def test_a_planned_call_runs_a_paired_decode_replica_after_its_prefill(pair: tuple[Replica, Replica]) -> None:
    prefill, decode = pair
    answer = asyncio.run(planned(decode, {decode.id: prefill}))
    assert isinstance(answer, Answer) and answer.status == 200
    assert orjson.loads(answer.body)["usage"]["completion_tokens"] == 12
