import pytest

from gateway.config.engine_groups import GROUP_LABEL
from gateway.config.pool import InferencePoolDiscovery
from gateway.discovery.api import DiscoveryFailed
from gateway.discovery.pool_members import PoolSpec, is_member, members, pool_spec
from gateway.domain import EngineConfig, EngineRole
from tests.gateway.discovery.fake_pool_api import pod, pool

PREFILL = EngineConfig(EngineRole.PREFILL, kv_connector="nixl")
TARGET = InferencePoolDiscovery("smollm2", "smollm2", engines=(("fast", EngineConfig()), ("standard", PREFILL)))
SPEC = PoolSpec((("duet.dev/model", "smollm2"),), (8000,))


def test_the_pool_gives_its_selector_sorted_and_its_ports():
    spec = pool_spec(pool(match_labels={"b": "2", "a": "1"}, ports=(8000, 8001)))
    assert spec == PoolSpec((("a", "1"), ("b", "2")), (8000, 8001))
    assert spec.label_selector == "a=1,b=2"


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(kind="Service"), "expected an InferencePool"),
    (lambda p: p.update(apiVersion="inference.networking.x-k8s.io/v1alpha2"), "expected an InferencePool"),
    (lambda p: p["spec"]["selector"].update(matchLabels={}), "matchLabels is missing or empty"),
    (lambda p: p["spec"].pop("selector"), "matchLabels is missing or empty"),
    (lambda p: p["spec"].update(targetPorts=[]), "targetPorts needs 1 to 8"),
    (lambda p: p["spec"].update(targetPorts=[{"number": 0}]), "targetPorts needs 1 to 8"),
    (lambda p: p["spec"].update(targetPorts=[{"number": 8000 + i} for i in range(9)]), "targetPorts needs 1 to 8"),
])
def test_a_pool_that_is_not_one_is_a_discovery_failure(change, message):
    body = pool()
    change(body)
    with pytest.raises(DiscoveryFailed, match=message):
        pool_spec(body)


@pytest.mark.parametrize("change, member", [
    (lambda p: None, True),
    (lambda p: p["status"]["conditions"][0].update(status="False"), False),
    (lambda p: p["status"].update(conditions=[]), False),
    (lambda p: p["status"].pop("podIP"), False),
    (lambda p: p["metadata"].update(deletionTimestamp="2026-12-06T09:00:00Z"), False),
])
def test_a_member_is_ready_addressed_and_not_being_deleted(change, member):
    body = pod("p", "fast", "10.0.0.1")
    change(body)
    assert is_member(body) is member


def test_members_are_named_after_their_pods_with_their_variants_engine():
    pods = [pod("vllm-fast-b", "fast", "10.0.0.2"), pod("vllm-std-a", "standard", "10.0.0.1"),
            pod("vllm-fast-c", "fast", "10.0.0.3", ready=False)]
    found = members(pods, SPEC, TARGET)
    assert [(r.id, r.url, r.variant) for r in found.replicas] == [
        ("smollm2/fast/vllm-fast-b", "http://10.0.0.2:8000", "fast"),
        ("smollm2/standard/vllm-std-a", "http://10.0.0.1:8000", "standard"),
    ]
    assert found.replicas[1].engine == PREFILL and found.unlabelled == ()


def test_pods_without_a_known_variant_label_are_left_out_and_named():
    found = members([pod("a", None, "10.0.0.1"), pod("b", "turbo", "10.0.0.2"), pod("c", "fast", "10.0.0.3")], SPEC, TARGET)
    assert [r.id for r in found.replicas] == ["smollm2/fast/c"]
    assert found.unlabelled == ("a", "b")


def test_every_target_port_is_an_endpoint_and_ipv6_is_bracketed():
    found = members([pod("p", "fast", "fd00::7")], PoolSpec(SPEC.match_labels, (8000, 8001)), TARGET)
    assert [(r.id, r.url) for r in found.replicas] == [("smollm2/fast/p:8000", "http://[fd00::7]:8000"),
                                                        ("smollm2/fast/p:8001", "http://[fd00::7]:8001")]


def test_a_pod_of_an_engine_group_runs_its_groups_engine_and_one_of_no_known_group_is_left_out():
    """One Deployment per engine group: the pod's group label says which engine it runs."""
    both = EngineConfig(EngineRole.BOTH, 2048, kv_connector="nixl")
    target = InferencePoolDiscovery("smollm2", "smollm2", engines=(("fast", EngineConfig()), ("standard", EngineConfig())),
                                    group_engines=(("standard", "both-nixl-c2048", both), ("standard", "prefill-nixl", PREFILL)))
    pods = [pod("p", "standard", "10.0.0.1"), pod("b", "standard", "10.0.0.2"), pod("x", "standard", "10.0.0.3"),
            pod("f", "fast", "10.0.0.4")]
    pods[0]["metadata"]["labels"][GROUP_LABEL] = "prefill-nixl"
    pods[1]["metadata"]["labels"][GROUP_LABEL] = "both-nixl-c2048"
    found = members(pods, SPEC, target)
    assert {r.id: r.engine for r in found.replicas} == {"smollm2/standard/p": PREFILL, "smollm2/standard/b": both,
                                                        "smollm2/fast/f": EngineConfig()}
    assert found.unlabelled == ("x",)
