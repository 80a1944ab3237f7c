"""vLLM's P/D handshake against simulated replicas on loopback: a prefill replica answers a
``do_remote_decode`` request with one token and the ``kv_transfer_params`` its decode replica
needs; the decode replica answers the client from them; each refuses the other's work; a KV
load that fails ends in vLLM's error (500, or an error event in a stream), never a silent loss."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from serving.sim.server.testing import SimProcess

MODEL = "smollm2"
PROFILE = "cpu-smollm2-bf16"  # has the KV shape and link a P/D role needs
BODY: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "Tell me about the sea. " * 20}],
                        "max_tokens": 12, "ignore_eos": True}
PREFILL_ASK = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
               "remote_block_ids": None, "remote_host": None, "remote_port": None}


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[str, str]]:
    with SimProcess(PROFILE, "--role", "prefill", "--time-scale", "50") as prefill, \
            SimProcess(PROFILE, "--role", "decode", "--time-scale", "50") as decode:
        yield prefill.url, decode.url


def chat(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)


def test_prefill_then_decode_answers_the_client_from_the_handed_kv(pair: tuple[str, str]) -> None:
    prefill, decode = pair
    first = chat(prefill, {**BODY, "max_tokens": 1, "kv_transfer_params": PREFILL_ASK})
    assert first.status_code == 200
    params = first.json()["kv_transfer_params"]
    assert params["do_remote_prefill"] is True and params["do_remote_decode"] is False
    assert params["remote_block_ids"] and params["remote_num_tokens"] == first.json()["usage"]["prompt_tokens"]
    assert first.json()["usage"]["completion_tokens"] == 1
    answer = chat(decode, {**BODY, "kv_transfer_params": params})
    assert answer.status_code == 200 and answer.json()["usage"]["completion_tokens"] == 12
    assert answer.json()["kv_transfer_params"] is None


def test_each_role_refuses_the_others_work(pair: tuple[str, str]) -> None:
    prefill, decode = pair
    refused = chat(prefill, BODY)  # a plain request would have the prefill replica decode the answer
    assert refused.status_code == 503 and "prefill_only" in refused.text
    refused = chat(decode, BODY)  # no transferred KV: the decode replica would have to prefill
    assert refused.status_code == 503 and "decode_only" in refused.text


def test_the_decode_replica_reports_its_role_and_the_kv_it_received(pair: tuple[str, str]) -> None:
    _, decode = pair
    metrics = httpx.get(f"{decode}/metrics", timeout=10).text
    assert 'role="decode"' in metrics and 'kv_role="kv_consumer"' in metrics


@pytest.mark.parametrize("stream", [False, True])
def test_a_failed_kv_load_ends_in_vllms_error_never_a_silent_loss(stream: bool) -> None:
    with SimProcess(PROFILE, "--role", "decode", "--time-scale", "50", "--kv-transfer-error-rate", "1") as decode:
        handed = {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": [0, 1]}
        response = chat(decode.url, {**BODY, "stream": stream, "kv_transfer_params": handed})
    if stream:
        assert response.status_code == 200
        assert '"code":500' in response.text and response.text.rstrip().endswith("data: [DONE]")
        assert '"delta"' not in response.text  # not a token before the error
    else:
        assert response.status_code == 500 and response.json()["error"]["message"] == "Internal server error"


def test_under_the_recompute_policy_a_failed_load_is_prefilled_locally_and_answered() -> None:
    with SimProcess(PROFILE, "--role", "decode", "--time-scale", "50", "--kv-transfer-error-rate", "1",
                    "--kv-load-failure-policy", "recompute") as decode:
        handed = {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": [0, 1]}
        response = chat(decode.url, {**BODY, "kv_transfer_params": handed})
    assert response.status_code == 200 and response.json()["usage"]["completion_tokens"] == 12


def test_kv_transfer_params_must_be_a_mapping(pair: tuple[str, str]) -> None:
    prefill, _ = pair
    response = chat(prefill, {**BODY, "kv_transfer_params": "yes"})
    assert response.status_code == 400 and "kv_transfer_params" in response.text
