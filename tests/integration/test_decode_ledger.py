"""The decode ledger through the HTTP path: a streaming request with little slack on the fast
replica makes a large prompt's dry run score that replica down (the decode-slack scorer), and the
entry leaves when the stream ends. Real gateway and simulator processes on loopback."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from .cluster import cluster, wait_until

# bf16's CPU speed at 2x: a 150-token answer streams for a few seconds.
PROFILES = {"standard": ("fast-test", "--time-scale", "1"), "fast": ("cpu-smollm2-bf16", "--time-scale", "2")}
SHORT = {"model": "smollm2:fast", "messages": [{"role": "user", "content": "Count slowly."}],
         "max_tokens": 150, "ignore_eos": True}
# ~1,500 prompt tokens: 300 ms of prefill at the fast variant's configured 5,000 tokens/s.
LARGE = {"model": "smollm2", "messages": [{"role": "user", "content": "word " * 1500}], "max_tokens": 16}


def with_decode_slack_scorer(raw: dict[str, Any]) -> None:
    routing = raw["routing"]
    routing["plugins"].append({"type": "decode-slack", "name": "decode-slack"})
    routing["profiles"]["default"]["scorers"].append({"plugin": "decode-slack", "weight": 2.0})


def dry_run(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    answer = httpx.post(url + "/v1/duet/route", json=body, headers=headers or {}, timeout=10)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def decode_slack_score(url: str, variant: str) -> float:
    # As chat: the demo policy would call a prompt this long long-context, which fast may not serve.
    replicas = dry_run(url, LARGE, {"x-duet-task": "chat"})["replicas"].values()
    entry = next(r for r in replicas if r["variant"] == variant)
    return float(next(v["score"] for v in entry["verdicts"] if v["plugin"] == "decode-slack"))


def test_a_prompt_is_scored_down_where_it_would_stall_a_short_answer_past_its_budget(tmp_path):
    with cluster(tmp_path, PROFILES, edit=with_decode_slack_scorer) as c:
        assert decode_slack_score(c.url, "fast") == 1.0
        # A budget 100 ms above the gateway's own prediction: 100 ms of stall to spare.
        predicted = dry_run(c.url, SHORT)["replicas"]["smollm2/fast/0"]["prediction_ms"]["e2e"]
        budget = {"x-duet-latency-budget-ms": str(int(predicted + 100))}
        done = threading.Event()

        def stream() -> None:
            with httpx.stream("POST", c.url + "/v1/chat/completions", json={**SHORT, "stream": True},
                              headers=budget, timeout=60) as response:
                assert response.status_code == 200
                for _ in response.iter_lines():
                    pass
            done.set()

        worker = threading.Thread(target=stream)
        worker.start()
        try:
            wait_until(lambda: decode_slack_score(c.url, "fast") < 1.0, 10, "the stream's slack in the ledger")
            # 300 ms of prefill against at most 100 ms of slack: a third or less.
            assert decode_slack_score(c.url, "fast") <= 0.34
            assert decode_slack_score(c.url, "standard") == 1.0
            assert not done.is_set()
        finally:
            worker.join(60)
        assert done.is_set()
        assert decode_slack_score(c.url, "fast") == 1.0  # the finished stream left the ledger
