"""Disaggregated prefill end to end: a gateway in front of simulated replicas (real processes on
loopback) of one variant, a prefill, a decode and a co-located one, splits a long prompt
(prefill replica, KV handoff, decode replica answers) streamed and not, keeps a short one whole,
falls back to the co-located replica when the decode's KV transfer fails, and answers with an
OpenAI error, never silence, when no replica is left."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from loadtests.launch.gateway_process import GatewayProcess
from serving.sim.server.testing import SimProcess

from .cluster import demo_config

NIXL = "NixlConnector"
LONG = [{"role": "user", "content": "Tell me about the sea and the ships on it. " * 12}]
SHORT = [{"role": "user", "content": "Hi"}]
PREFILL, DECODE, WHOLE = "smollm2/standard/0", "smollm2/standard/1", "smollm2/standard/2"
ROLES = {PREFILL: "prefill", DECODE: "decode", WHOLE: "both"}


def sim(role: str, *flags: str) -> SimProcess:
    return SimProcess("cpu-smollm2-bf16", "--served-model-name", "smollm2-standard", "--role", role,
                      "--time-scale", "50", *flags)


@contextmanager
def gateway(tmp: Path, decode_flags: tuple[str, ...] = (), whole: bool = True) -> Iterator[tuple[str, dict[str, str]]]:
    """The gateway's URL and the replicas' URLs by id (standard: prefill, decode[, both])."""
    with ExitStack() as stack:
        sims = {PREFILL: stack.enter_context(sim("prefill")), DECODE: stack.enter_context(sim("decode", *decode_flags))}
        if whole:
            sims[WHOLE] = stack.enter_context(sim("both"))
        fast = stack.enter_context(SimProcess("fast-test", "--served-model-name", "smollm2-fast"))
        raw: dict[str, Any] = demo_config({"standard": sims[PREFILL].url, "fast": fast.url})
        # ids in this order: /0, /1, /2; the co-located one without a connector serves whole only
        # (with one it would decode transferred KV too, as vLLM's kv_both does, and be the next pair)
        raw["models"]["smollm2"]["variants"]["standard"]["replicas"] = [
            {"url": s.url, "engine": {"role": ROLES[replica_id], "kv_connector": NIXL} if replica_id != WHOLE
             else {"role": "both"}} for replica_id, s in sims.items()]
        raw["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})
        for profile in raw["routing"]["profiles"].values():
            profile["filters"].append("engine-role")
        raw["routing"]["disaggregation"] = {"rule": "threshold", "non_cached_tokens": 16}
        config = tmp / "duet.yaml"
        config.write_text(yaml.safe_dump(raw, sort_keys=False))
        with GatewayProcess(config, log_path=tmp / "gateway.log") as process:
            yield process.url, {replica_id: s.url for replica_id, s in sims.items()}


def chat(url: str, messages: list[dict[str, str]], stream: bool = False) -> httpx.Response:
    body = {"model": "smollm2:standard", "messages": messages, "max_tokens": 8, "stream": stream}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)


def served(replica_url: str) -> float:
    """Requests the replica finished (vLLM's request_success_total, summed over reasons)."""
    text = httpx.get(f"{replica_url}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:request_success_total"))


def test_a_long_prompt_is_split_and_a_short_one_served_whole(tmp_path: Path) -> None:
    with gateway(tmp_path) as (url, replicas):
        for stream in (False, True):
            response = chat(url, LONG, stream)
            assert response.status_code == 200, response.text
            assert response.headers["x-duet-replica"] == DECODE and "split:" in response.headers["x-duet-route"]
            if stream:
                assert response.text.rstrip().endswith("data: [DONE]") and '"error"' not in response.text
            else:
                assert response.json()["usage"]["completion_tokens"] == 8
        assert served(replicas[PREFILL]) == 2 and served(replicas[DECODE]) == 2  # one prefill per answer
        short = chat(url, SHORT)
        assert short.status_code == 200 and short.headers["x-duet-replica"] == WHOLE
        assert "whole:" in short.headers["x-duet-route"]
        assert served(replicas[PREFILL]) == 2  # the short prompt never reached the prefill replica


@pytest.mark.parametrize("stream", [False, True])
def test_a_kv_transfer_that_fails_falls_back_to_the_colocated_replica(tmp_path: Path, stream: bool) -> None:
    with gateway(tmp_path, ("--kv-transfer-error-rate", "1")) as (url, replicas):
        response = chat(url, LONG, stream)
        assert response.status_code == 200, response.text
        assert response.headers["x-duet-replica"] == WHOLE
        assert '"error"' not in response.text
        assert served(replicas[PREFILL]) == 1 and served(replicas[WHOLE]) == 1  # the pair was tried first


def test_with_no_replica_left_the_client_gets_an_openai_error(tmp_path: Path) -> None:
    with gateway(tmp_path, ("--kv-transfer-error-rate", "1"), whole=False) as (url, _):
        response = chat(url, LONG)
        assert response.status_code in (502, 503), response.text
        error = response.json()["error"]
        assert error["message"] and error["type"]
