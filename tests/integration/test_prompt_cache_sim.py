"""Prompt cache and sessions end to end: the gateway under uvicorn, simulated replicas that model
vLLM's prefix cache, a multi-turn conversation over HTTP."""

from __future__ import annotations

import re

import httpx

from .cluster import cluster, wait_until

PROFILES = {"standard": ("fast-test", "--time-scale", "1"), "fast": ("fast-test", "--time-scale", "1")}
SYSTEM = {"role": "system", "content": "You answer questions about caches. " * 40}


def hit_rate(url: str) -> dict[str, float]:
    rates = {}
    for line in httpx.get(url + "/metrics").text.splitlines():
        if line.startswith("duet_replica_prefix_cache_hit_rate{"):
            replica = re.search(r'replica="([^"]+)"', line).group(1)  # type: ignore[union-attr]
            rates[replica] = float(line.rsplit(" ", 1)[1])
    return rates


def test_a_conversation_keeps_its_session_and_its_replica_warm(tmp_path):
    with cluster(tmp_path, PROFILES) as c:
        messages = [SYSTEM]
        served, sessions = [], []
        for turn in range(6):
            messages.append({"role": "user", "content": f"Question {turn}: what is a prefix block? " * 8})
            response = httpx.post(c.url + "/v1/chat/completions", timeout=30,
                                  json={"model": "smollm2", "messages": messages, "max_tokens": 8},
                                  headers={"x-session-id": "conversation-1"})
            assert response.status_code == 200
            served.append(response.headers["x-duet-replica"])
            sessions.append(response.headers["x-duet-session"])
            messages.append({"role": "assistant", "content": response.json()["choices"][0]["message"]["content"]})
        assert len(set(served)) == 1  # never moved: nothing forced it
        assert [re.search(r"turn=(\d+)", s).group(1) for s in sessions] == [str(t) for t in range(1, 7)]  # type: ignore[union-attr]
        assert all("moved" not in s for s in sessions)

        messages.append({"role": "user", "content": "One more question."})
        report = httpx.post(c.url + "/v1/duet/route", headers={"x-session-id": "conversation-1"},
                            json={"model": "smollm2", "messages": messages}).json()
        cached = {replica: entry["cached_tokens"] for replica, entry in report["replicas"].items()}
        assert cached[served[0]] >= 256 and all(v == 0 for r, v in cached.items() if r != served[0])
        assert report["session"]["turn"] == 7 and report["decision"]["ranked_replicas"][0] == served[0]

        # vLLM's own count agrees that the replica found the conversation in its cache.
        wait_until(lambda: hit_rate(c.url).get(served[0], 0.0) > 0.0, 15, "a prefix-cache hit rate above zero")
