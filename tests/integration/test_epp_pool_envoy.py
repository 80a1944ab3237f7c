"""``duet epp`` behind a real Envoy, its endpoints read from an InferencePool through the
Kubernetes API: the fake API server on loopback stands in for a cluster (none can run here), a
simulated replica for the pod. The openai SDK is answered by the pod the pool lists; with the pod
gone, the picker says it is not ready and Envoy's clients get the protocol's 503; a new pod is
picked up and answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
from grpc_health.v1 import health_pb2

from serving.sim.server.testing import SimProcess
from tests.gateway.discovery.fake_pool_api import FakePoolApi, FakePoolApiThread, pod, pool
from tests.gateway.discovery.test_pool_gateway import demo_from_pool

from .cluster import wait_until
from .envoy import EnvoyProcess, EppProcess, envoy_binary

pytestmark = pytest.mark.envoy

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@dataclass
class PoolStack:
    api: FakePoolApiThread
    epp: EppProcess
    envoy: EnvoyProcess


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolStack]:
    assert envoy_binary() is not None, "no Envoy binary: run `make envoy-env`"
    tmp = tmp_path_factory.mktemp("epp-pool")
    with SimProcess("fast-test", "--served-model-name", "smollm2-standard") as replica, \
            FakePoolApiThread(FakePoolApi(pool(ports=(replica.port,)))) as api:
        api.call(api.api.put_pod(pod("vllm-standard-0", "standard", "127.0.0.1")))
        config = tmp / "duet.yaml"
        config.write_text(demo_from_pool())
        with EppProcess(config, extra_args=("--kubernetes-api", api.api.url)) as epp, EnvoyProcess(tmp, epp.port) as envoy:
            yield PoolStack(api, epp, envoy)


def ask(stack: PoolStack) -> httpx.Response:
    return httpx.post(f"{stack.envoy.url}/v1/chat/completions", timeout=30,
                      json={"model": "smollm2", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8})


def test_the_pools_pod_answers_then_its_absence_is_a_503_then_a_new_pod_answers(stack: PoolStack, tmp_path: Path) -> None:
    client = openai.OpenAI(base_url=f"{stack.envoy.url}/v1", api_key="unused", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "user", "content": "Say hi."}], max_tokens=8)
    assert raw.headers["x-duet-replica"] == "smollm2/standard/vllm-standard-0"
    assert raw.parse().choices[0].message.content
    assert raw.parse().model == "smollm2"  # the served name rewritten back, as on the proxy path

    stack.api.call(stack.api.api.delete_pod("vllm-standard-0"))
    wait_until(lambda: stack.epp.health("readiness") == NOT_SERVING, timeout_s=15)
    refused = ask(stack)
    assert refused.status_code == 503
    error = refused.json()["error"]
    assert error["code"] == "no_healthy_replica" and "has no replicas" in error["message"]

    stack.api.call(stack.api.api.put_pod(pod("vllm-standard-1", "standard", "127.0.0.1")))
    wait_until(lambda: stack.epp.health("readiness") == SERVING, timeout_s=15)
    answered = ask(stack)
    assert answered.status_code == 200 and answered.headers["x-duet-replica"] == "smollm2/standard/vllm-standard-1"


def test_a_pod_that_turns_unready_is_not_picked(stack: PoolStack) -> None:
    api = stack.api
    name = "vllm-standard-2"
    api.call(api.api.put_pod(pod(name, "standard", "127.0.0.1")))
    for other in [p for p in api.api.pods if p != name]:
        api.call(api.api.delete_pod(other))
    wait_until(lambda: ask(stack).headers.get("x-duet-replica") == f"smollm2/standard/{name}", timeout_s=15)
    api.call(api.api.put_pod(pod(name, "standard", "127.0.0.1", ready=False)))
    wait_until(lambda: ask(stack).status_code == 503, timeout_s=15)
