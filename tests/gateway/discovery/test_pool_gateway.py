"""A running Gateway whose model is an InferencePool, against the fake Kubernetes API (a real
cluster cannot run here): the replicas follow the pool's pods, the monitor health-checks what was
found, and a pool whose selector matches nothing makes the endpoint picker answer 503 (GIE's
protocol: no endpoint can take the request)."""

import asyncio
from typing import Any

import orjson
import yaml
from aiohttp import web
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc

from gateway.config import parse_config
from gateway.discovery.api import ApiSettings
from gateway.epp.stream import PickerStream
from gateway.flow import Health
from gateway.runtime import Gateway
from tests.gateway.discovery.fake_pool_api import NAMESPACE, FakePoolApi, pod, pool
from tests.gateway.discovery.test_pool_watch import wait_for
from tests.gateway.discovery.test_resolve import DEMO
from tests.gateway.epp.test_wire import headers_request
from tests.loopback_app import serve


def demo_from_pool(refresh_s: float = 0.2) -> str:
    raw = yaml.safe_load(DEMO.read_text())
    model = raw["models"]["smollm2"]
    for variant in model["variants"].values():
        del variant["replicas"]
    model["inference_pool"] = {"name": "smollm2", "namespace": NAMESPACE, "variant_label": "duet.dev/variant"}
    raw["state"].update(health_interval_s=refresh_s, scrape_interval_s=refresh_s)
    return yaml.safe_dump(raw, sort_keys=False)


class Replica:
    """A replica's /health and /metrics on a free loopback port (what the monitor reads)."""

    async def start(self) -> "Replica":
        async def health(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def metrics(_: web.Request) -> web.Response:
            return web.Response(text="vllm:num_requests_running 0\n")

        app = web.Application()
        app.router.add_get("/health", health)
        app.router.add_get("/metrics", metrics)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        await self._runner.cleanup()


class Channel:
    """An ext_proc stream fed from a list; what the picker writes is kept."""

    def __init__(self, messages: list[Any]) -> None:
        self._messages = list(messages)
        self.written: list[Any] = []

    async def read(self) -> Any:
        return self._messages.pop(0) if self._messages else None

    async def write(self, response: Any) -> None:
        self.written.append(response)

    def answered(self) -> None:
        pass


def chat_request() -> list[Any]:
    body = orjson.dumps({"model": "smollm2", "messages": [{"role": "user", "content": "hi"}]})
    headers = headers_request({":path": "/v1/chat/completions", ":method": "POST"},
                              protocol_config=ext_proc.ProtocolConfiguration(request_body_mode=4))
    return [headers, ext_proc.ProcessingRequest(request_body=ext_proc.HttpBody(body=body, end_of_stream=True))]


def test_the_gateway_routes_to_the_pools_ready_pods_and_monitors_them():
    async def scenario() -> None:
        replica = await Replica().start()
        api = await FakePoolApi(pool(ports=(replica.port,))).start()
        gateway = Gateway(parse_config(demo_from_pool()), kubernetes=ApiSettings(api.url, token_path=None, ca_path=None))
        try:
            await api.put_pod(pod("vllm-standard-0", "standard", "127.0.0.1"))
            await gateway.start()
            ids = lambda: {r.id for r in gateway.current.config.replicas}  # noqa: E731
            assert ids() == {"smollm2/standard/vllm-standard-0"}
            await wait_for(lambda: (s := gateway.store.snapshot().get("smollm2/standard/vllm-standard-0")) is not None
                           and s.health is Health.UP)
            await api.put_pod(pod("vllm-fast-0", "fast", "127.0.0.1"))  # same address: one replica server stands in
            await wait_for(lambda: ids() == {"smollm2/standard/vllm-standard-0", "smollm2/fast/vllm-fast-0"})
            assert {r.id for r in gateway._monitor.replicas} == ids()
            await api.put_pod(pod("vllm-standard-0", "standard", "127.0.0.1", ready=False))
            await wait_for(lambda: ids() == {"smollm2/fast/vllm-fast-0"})
            await api.delete_pod("vllm-fast-0")
            await wait_for(lambda: ids() == set())
            assert {r.id for r in gateway._monitor.replicas} == set()
        finally:
            await gateway.stop()
            await api.stop()
            await replica.stop()

    asyncio.run(scenario())


def test_a_pool_whose_selector_matches_nothing_answers_503_through_the_picker():
    async def scenario() -> None:
        api = await FakePoolApi(pool(match_labels={"duet.dev/model": "not-deployed"})).start()
        await api.put_pod(pod("vllm-standard-0", "standard", "10.0.0.1"))
        gateway = Gateway(parse_config(demo_from_pool()), kubernetes=ApiSettings(api.url, token_path=None, ca_path=None))
        try:
            await gateway.start()
            assert gateway.current.config.replicas == ()
            channel = Channel(chat_request())
            await PickerStream(gateway, channel).run()
        finally:
            await gateway.stop()
            await api.stop()
        (answer,) = channel.written
        assert answer.immediate_response.status.code == 503
        error = orjson.loads(answer.immediate_response.body)["error"]
        assert error["code"] == "no_healthy_replica" and "smollm2" in error["message"]

    asyncio.run(scenario())
