"""The replay and the HTTP gateway are one code path: the same requests, replayed in virtual time
against simulator engines and sent over HTTP to a gateway in front of simulated replicas of the
same profile, get the same routing decision each (variant and reason, or the same refusal).

The requests are sent one at a time (each ends before the next starts) so that both see idle,
healthy replicas; they differ in what routing decides on: the task (parity's allowed tasks), the
budget, and a prompt no variant's context holds."""

from __future__ import annotations

import httpx

from gateway.config import load_config
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.workload.traces import Arrival
from serving.sim.profile import load_profile

from .cluster import cluster

PROFILES = {"standard": ("fast-test", "--time-scale", "1"), "fast": ("fast-test", "--time-scale", "1")}
# (task, input tokens, output tokens): chat/coding/agent/extraction are allowed on fast in the demo,
# reasoning and long-context are not; 2100 + 8 tokens fit neither variant's 2048-token context.
REQUESTS = [("chat", 64, 8), ("reasoning", 64, 8), ("coding", 300, 16), ("long-context", 64, 8),
            ("extraction", 500, 4), ("chat", 2100, 8), ("agent", 64, 8)]


def _over_http(url: str) -> list[tuple[str, str | None, str | None]]:
    decisions = []
    with httpx.Client(base_url=url, timeout=30) as client:
        for task, input_tokens, output_tokens in REQUESTS:
            body = {"model": "smollm2", "prompt": [1] * input_tokens, "max_tokens": output_tokens,
                    "min_tokens": output_tokens, "ignore_eos": True}
            response = client.post("/v1/completions", json=body, headers={"x-duet-task": task})
            if response.status_code == 200:
                decisions.append(("ok", response.headers["x-duet-variant"], response.headers["x-duet-route"]))
            else:
                decisions.append((f"refused {response.status_code}", None, None))
    return decisions


def _replayed(config_path: str) -> list[tuple[str, str | None, str | None]]:
    config = load_config(config_path)
    profiles = {name: load_profile(profile) for name, (profile, *_) in PROFILES.items()}
    # 60 s apart in virtual time: each request has long finished before the next arrives.
    arrivals = [Arrival(60.0 * (i + 1), task, n_in, n_out) for i, (task, n_in, n_out) in enumerate(REQUESTS)]
    decisions = []
    # Forced lengths, as the HTTP requests send them.
    for result in Replay(config, profiles, ReplaySettings(forced_length=True)).run(arrivals):
        if result.status == "ok":
            decisions.append(("ok", result.variant, result.route))
        else:
            decisions.append((f"refused {result.refusal_status}", None, None))
    return decisions


def test_the_replay_and_the_gateway_decide_alike(tmp_path):
    with cluster(tmp_path, PROFILES) as c:
        over_http = _over_http(c.url)
        replayed = _replayed(str(c.config_path))
    assert replayed == over_http
    # The requests exercise more than one answer: both variants, and a refusal.
    assert {variant for _, variant, _ in over_http} == {"standard", "fast", None}
    assert ("refused 400", None, None) in over_http
