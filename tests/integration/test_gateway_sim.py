"""The gateway end to end: real processes on loopback (gateway under uvicorn, simulated replicas),
the official openai SDK as the client."""

from __future__ import annotations

import json
import signal
import time

import httpx
import openai
import pytest

from .cluster import cluster, wait_until

FAST_PROFILES = {"standard": ("fast-test", "--time-scale", "1"), "fast": ("fast-test", "--time-scale", "1")}
MESSAGES = [{"role": "user", "content": "Say hello in five words."}]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    with cluster(tmp_path_factory.mktemp("demo"), FAST_PROFILES) as c:
        yield c


@pytest.fixture(scope="module")
def client(demo):
    with openai.OpenAI(base_url=demo.url + "/v1", api_key="unused", max_retries=0, timeout=20) as c:
        yield c


def test_non_stream_chat(client):
    raw = client.chat.completions.with_raw_response.create(model="smollm2", messages=MESSAGES, max_tokens=12)
    completion = raw.parse()
    assert completion.model == "smollm2"
    assert completion.choices[0].message.content
    assert completion.usage.completion_tokens > 0
    assert raw.headers["x-duet-variant"] in {"standard", "fast"}
    assert raw.headers["x-duet-replica"].startswith("smollm2/")
    assert float(raw.headers["x-duet-overhead-ms"]) >= 0


def test_stream_with_usage(client):
    chunks = list(client.chat.completions.create(
        model="smollm2", messages=MESSAGES, max_tokens=12, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.model == "smollm2" for c in chunks)
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text


def test_stream_without_usage_hides_the_usage_chunk_duet_asked_for(client):
    chunks = list(client.chat.completions.create(model="smollm2", messages=MESSAGES, max_tokens=8, stream=True))
    assert chunks and all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)


def test_completions_endpoint(client):
    completion = client.completions.create(model="smollm2", prompt="Once upon a time", max_tokens=8)
    assert completion.model == "smollm2" and completion.choices[0].text


def test_tool_call(client):
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    raw = client.chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=tools,
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    call = raw.parse().choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert isinstance(json.loads(call.function.arguments)["city"], str)


@pytest.mark.parametrize(("model", "variant"),
                         [("smollm2:standard", "standard"), ("smollm2:fast", "fast"), ("standard", "standard")])
def test_pinned_variant_goes_there(client, model, variant):
    raw = client.chat.completions.with_raw_response.create(model=model, messages=MESSAGES, max_tokens=4)
    assert raw.headers["x-duet-variant"] == variant
    assert raw.headers["x-duet-route"] == "pinned"
    assert raw.parse().model == model


def test_reasoning_task_goes_to_standard(client):
    raw = client.chat.completions.with_raw_response.create(
        model="smollm2", messages=MESSAGES, max_tokens=4, extra_headers={"x-duet-task": "reasoning"})
    assert raw.headers["x-duet-variant"] == "standard"


def test_tight_budget_goes_to_fast(client):
    raw = client.chat.completions.with_raw_response.create(
        model="smollm2", messages=MESSAGES, max_tokens=16, extra_headers={"x-duet-latency-budget-ms": "300"})
    assert raw.headers["x-duet-variant"] == "fast"


def test_unknown_model_is_404(client):
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-9", messages=MESSAGES)
    assert info.value.body["code"] == "model_not_found"


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [(b'{"model": "smollm2", "messages": [', 400, None),
     (b'{"model": "smollm2", "messages": "hi"}', 400, "messages"),
     (b'{"model": "smollm2", "messages": [{"role": "user", "content": "x"}], "max_tokens": -3}', 400, "max_tokens"),
     (b'[1, 2]', 400, None)],
)
def test_bad_bodies_are_400_in_openai_shape(demo, body, status, param):
    response = httpx.post(demo.url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param and error["message"]


def test_prompt_too_long_for_every_replica_is_400_naming_the_limit(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "word " * 12000}])
    assert "maximum context length is 2048 tokens" in info.value.message


def test_models_lists_logical_and_pinned_names(client):
    ids = {m.id: m for m in client.models.list().data}
    assert {"smollm2", "smollm2:standard", "smollm2:fast"} <= set(ids)


def test_health_ready_metrics(demo, client):
    # One streamed answer of its own: the histograms have no buckets until a request is observed,
    # and this test must not depend on which tests ran before it.
    assert list(client.chat.completions.create(model="smollm2", messages=MESSAGES, max_tokens=4, stream=True))
    assert httpx.get(demo.url + "/health").json() == {"status": "ok"}
    assert httpx.get(demo.url + "/ready").json()["ready"] is True
    metrics = httpx.get(demo.url + "/metrics").text
    for name in ("duet_requests_total", "duet_ttft_seconds_bucket", "duet_gateway_overhead_seconds_bucket",
                 "duet_routing_decisions_total", "duet_slo_total", "duet_cost_usd_total", "duet_replica_up"):
        assert name in metrics


def extension_counts(url: str) -> dict[tuple[str, str], float]:
    """duet_extension_point_duration_seconds_count by (extension point, plugin)."""
    counts = {}
    for line in httpx.get(url + "/metrics").text.splitlines():
        if line.startswith("duet_extension_point_duration_seconds_count{"):
            labels, value = line.removeprefix("duet_extension_point_duration_seconds_count").rsplit(" ", 1)
            fields = dict(part.split("=", 1) for part in labels.strip("{}").split(","))
            counts[fields["extension_point"].strip('"'), fields["plugin"].strip('"')] = float(value)
    return counts


def test_every_hook_subscriber_and_routing_plugin_that_ran_is_timed_once_per_request(demo, client):
    pinned = {"model": "smollm2:standard", "messages": MESSAGES, "max_tokens": 4}
    client.chat.completions.create(**pinned)  # every series this request touches exists
    before = extension_counts(demo.url)
    client.chat.completions.create(**pinned)
    after = extension_counts(demo.url)
    grown = {series for series in after if after[series] == before.get(series, 0) + 1}
    points = {point for point, _ in grown}
    assert {"dispatched", "first_token", "attempt_ended", "done", "filter", "predictor", "scorer", "objective"} <= points
    assert {("dispatched", "decode-keeper"), ("attempt_ended", "state-keeper"), ("done", "quota-keeper"),
            ("done", "telemetry-keeper"), ("filter", "healthy")} <= grown
    assert all(after[s] == before.get(s, 0) for s in after if s not in grown)  # nothing else ran


def test_dry_run_route_explains_every_plugin(demo):
    body = {"model": "smollm2", "messages": MESSAGES}
    report = httpx.post(demo.url + "/v1/duet/route", json=body, headers={"x-duet-task": "reasoning"}).json()
    assert report["decision"]["variant"] == "standard"
    fast = report["replicas"]["smollm2/fast/0"]["verdicts"]
    assert {"plugin": "task-allowed", "passed": False, "reason": "reasoning not proven on fast"} in fast


def test_request_id_is_echoed(demo):
    response = httpx.post(demo.url + "/v1/chat/completions", json={"model": "smollm2", "messages": MESSAGES, "max_tokens": 2},
                          headers={"x-request-id": "abc-123"})
    assert response.headers["x-request-id"] == "abc-123"


# --- failures: each test gets its own replicas --------------------------------------------------

QUIET_MONITOR = {"health_interval_s": 30.0, "scrape_interval_s": 30.0, "stale_after_s": 120.0}


def test_replica_killed_before_first_byte_is_served_by_the_next(tmp_path):
    with cluster(tmp_path, FAST_PROFILES, state=QUIET_MONITOR) as c:
        c.sims["fast"].kill()  # the gateway still believes it is up: its monitor is slow
        response = httpx.post(c.url + "/v1/chat/completions", json={"model": "smollm2", "messages": MESSAGES, "max_tokens": 4})
        assert response.status_code == 200
        assert response.headers["x-duet-variant"] == "standard"
        assert response.headers["x-duet-route"].endswith(";fallback")
        assert 'duet_fallbacks_total{model="smollm2"} 1.0' in httpx.get(c.url + "/metrics").text


def test_replica_killed_mid_stream_ends_the_stream_with_an_error(tmp_path):
    slow = {"standard": ("cpu-smollm2-bf16", "--time-scale", "4"), "fast": ("cpu-smollm2-bf16", "--time-scale", "4")}
    with cluster(tmp_path, slow, state=QUIET_MONITOR) as c:
        client = openai.OpenAI(base_url=c.url + "/v1", api_key="unused", max_retries=0, timeout=20)
        stream = client.chat.completions.create(
            model="smollm2:fast", messages=MESSAGES, max_tokens=400, stream=True, extra_body={"ignore_eos": True})
        received = []
        started = time.monotonic()
        with pytest.raises(openai.APIError, match="mid-stream|before it finished"):
            for chunk in stream:
                received.append(chunk)
                if len(received) == 3:
                    c.sims["fast"].kill()
        assert len(received) >= 3 and time.monotonic() - started < 15
        metrics = httpx.get(c.url + "/metrics").text
        assert 'duet_stream_errors_total{model="smollm2",variant="fast"} 1.0' in metrics


def test_client_disconnect_cancels_the_upstream_request(tmp_path):
    slow = {"standard": ("cpu-smollm2-bf16", "--time-scale", "4"), "fast": ("cpu-smollm2-bf16", "--time-scale", "4")}
    with cluster(tmp_path, slow) as c:
        sim = c.sims["fast"]

        def running() -> float:
            for line in httpx.get(sim.url + "/metrics").text.splitlines():
                if line.startswith("vllm:num_requests_running{"):
                    return float(line.rsplit(" ", 1)[1])
            return 0.0

        body = {"model": "smollm2:fast", "messages": MESSAGES, "max_tokens": 1000, "ignore_eos": True, "stream": True}
        with httpx.stream("POST", c.url + "/v1/chat/completions", json=body, timeout=20) as response:
            for _ in response.iter_lines():
                if running() >= 1:
                    break
        wait_until(lambda: running() == 0, 10, "upstream request cancelled")


def test_invalid_config_reload_keeps_the_old_policy(tmp_path):
    with cluster(tmp_path, FAST_PROFILES) as c:
        def variant(headers=None):
            r = httpx.post(c.url + "/v1/chat/completions", json={"model": "smollm2", "messages": MESSAGES, "max_tokens": 2},
                           headers=headers or {})
            assert r.status_code == 200
            return r.headers["x-duet-variant"]

        assert variant() == "fast"
        good = c.config_path.read_text()
        c.config_path.write_text(good.replace("allowed_tasks:", "allowed_taskz:", 1))
        c.gateway.signal(signal.SIGHUP)
        wait_until(lambda: "config reload refused" in (tmp_path / "gateway.log").read_text(), 10, "reload refused")
        assert variant() == "fast"
        # A valid change is applied: chat is no longer proven on fast.
        c.config_path.write_text(good)
        c.rewrite_config(lambda raw: raw["models"]["smollm2"]["variants"]["fast"].update(allowed_tasks=["coding"]))
        c.gateway.signal(signal.SIGHUP)
        wait_until(lambda: variant() == "standard", 10, "new policy applied")


def test_unhealthy_replica_leaves_routing_and_ready_reports_it(tmp_path):
    with cluster(tmp_path, FAST_PROFILES, state={"health_interval_s": 0.2, "stale_after_s": 1.0}) as c:
        c.sims["fast"].kill()
        wait_until(lambda: httpx.get(c.url + "/ready").json()["models"]["smollm2"]["healthy_replicas"] == ["smollm2/standard/0"],
                   10, "fast replica marked down")
        response = httpx.post(c.url + "/v1/chat/completions", json={"model": "smollm2:fast", "messages": MESSAGES})
        assert response.status_code == 503 and response.headers["retry-after"]
        c.sims["standard"].kill()
        wait_until(lambda: httpx.get(c.url + "/ready").status_code == 503, 10, "not ready")
