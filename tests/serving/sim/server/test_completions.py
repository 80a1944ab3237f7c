"""Completion requests under injected failures, against a real simulator process."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from serving.sim.server.testing import SimProcess

BODY = {"model": "sim-model", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 40,
        "ignore_eos": True}


@pytest.fixture
def sim() -> Iterator[SimProcess]:
    with SimProcess("fast-test", "--seed", "1") as process:
        yield process


def wait_until(condition, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def running(url: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("vllm:num_requests_running{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no running gauge")


@pytest.mark.parametrize("status", [429, 500, 503])
def test_header_forces_an_error(sim: SimProcess, status: int) -> None:
    reply = httpx.post(f"{sim.url}/v1/chat/completions", json=BODY, headers={"x-sim-fail": str(status)})
    assert reply.status_code == status
    assert reply.json()["error"]["code"] == status


def test_error_rate_set_at_run_time(sim: SimProcess) -> None:
    assert httpx.post(f"{sim.url}/sim/faults", json={"error_rate": 1.0, "error_kinds": [503]}).status_code == 200
    assert httpx.get(f"{sim.url}/sim/faults").json()["error_rate"] == 1.0
    assert {httpx.post(f"{sim.url}/v1/chat/completions", json=BODY).status_code for _ in range(5)} == {503}
    httpx.post(f"{sim.url}/sim/faults", json={"error_rate": 0.0})
    assert httpx.post(f"{sim.url}/v1/chat/completions", json=BODY).status_code == 200
    assert httpx.post(f"{sim.url}/sim/faults", json={"error_rate": 7}).status_code == 400


def test_dies_mid_stream_after_n_tokens(sim: SimProcess) -> None:
    text = ""
    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.stream("POST", f"{sim.url}/v1/chat/completions", json=BODY | {"stream": True},
                          headers={"x-sim-die-after-tokens": "5"}) as response:
            assert response.status_code == 200
            for chunk in response.iter_text():
                text += chunk
    assert text.count('"content"') >= 5 and "[DONE]" not in text
    wait_until(lambda: running(sim.url) == 0)  # the engine let go of the request


def test_non_stream_death_cuts_the_body(sim: SimProcess) -> None:
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(f"{sim.url}/v1/chat/completions", json=BODY, headers={"x-sim-die-after-tokens": "3"})


def test_hang_never_answers_until_cleared(sim: SimProcess) -> None:
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{sim.url}/v1/chat/completions", json=BODY, headers={"x-sim-hang": "1"}, timeout=0.5)
    httpx.post(f"{sim.url}/sim/faults", json={"hang": True})
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(f"{sim.url}/health", timeout=0.5)
    httpx.post(f"{sim.url}/sim/faults", json={"hang": False})
    assert httpx.get(f"{sim.url}/health").status_code == 200


def e2e_seconds_total(url: str) -> float:
    """Sum of the model's (virtual) end-to-end latencies so far, from /metrics."""
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("vllm:e2e_request_latency_seconds_sum{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no e2e latency histogram")


def test_slowdown_stretches_every_step(sim: SimProcess) -> None:
    def request() -> tuple[float, float]:
        """(virtual seconds the engine took, wall seconds the client waited)."""
        before, started = e2e_seconds_total(sim.url), time.monotonic()
        assert httpx.post(f"{sim.url}/v1/chat/completions", json=BODY | {"max_tokens": 100}).status_code == 200
        return e2e_seconds_total(sim.url) - before, time.monotonic() - started

    normal, _ = request()
    httpx.post(f"{sim.url}/sim/faults", json={"slowdown": 40})
    slow, waited = request()  # 100 steps of 0.5 ms x 40 = 2 s
    # The model's clock is exact whatever the machine's load; the client waits at least that
    # long (load can only add to the wait, so this bound cannot flake).
    assert slow == pytest.approx(40 * normal, rel=0.05) and slow > 1.9
    assert waited >= slow


def test_client_disconnect_frees_the_engine(sim: SimProcess) -> None:
    httpx.post(f"{sim.url}/sim/faults", json={"slowdown": 100})  # 50 ms steps: 1000 tokens take 50 s
    with httpx.Client(timeout=30) as http:
        with http.stream("POST", f"{sim.url}/v1/chat/completions",
                         json=BODY | {"stream": True, "max_tokens": 1000}) as response:
            assert response.status_code == 200
            lines = response.iter_lines()  # keep it: a dropped line iterator closes the connection
            assert next(lines).startswith("data: ")
            wait_until(lambda: running(sim.url) == 1)
    # The client is gone (its connection closed with the client); the engine lets go.
    wait_until(lambda: running(sim.url) == 0, timeout_s=30)


def test_sigkill_cuts_open_streams() -> None:
    with SimProcess("fast-test", "--slowdown", "100") as sim:
        client = openai.OpenAI(base_url=f"{sim.url}/v1", api_key="unused", max_retries=0)
        stream = client.chat.completions.create(model="sim-model", messages=BODY["messages"], max_tokens=1000,
                                                stream=True)
        next(iter(stream))
        sim.kill()
        with pytest.raises((openai.APIError, httpx.HTTPError)):
            for _ in stream:
                pass
