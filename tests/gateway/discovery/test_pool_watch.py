"""PoolWatcher against a fake Kubernetes API server on loopback (a real cluster cannot run here):
pods appear, turn unready and go; a 410 on the watch and the resync bound each start a new list."""

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest

from gateway.config.pool import InferencePoolDiscovery
from gateway.discovery.api import ApiSettings, DiscoveryFailed, KubernetesApi
from gateway.discovery.pool_watch import PoolVariantSource, PoolWatcher
from gateway.domain import EngineConfig
from tests.gateway.discovery.fake_pool_api import NAMESPACE, FakePoolApi, pod, pool

ENGINES = (("fast", EngineConfig()), ("standard", EngineConfig()))
TARGET = InferencePoolDiscovery("smollm2", "smollm2", NAMESPACE, engines=ENGINES, resync_s=600, watch_timeout_s=30,
                                retry_s=0.05)


async def wait_for(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


@asynccontextmanager
async def watching(api: FakePoolApi, target: InferencePoolDiscovery = TARGET) -> AsyncIterator[tuple[PoolWatcher, list[int]]]:
    changes: list[int] = []
    async with aiohttp.ClientSession() as session:
        settings = ApiSettings(api.url, token_path=None, ca_path=None, timeout_s=2.0)
        watcher = PoolWatcher(target, KubernetesApi(settings, session), lambda: changes.append(1))
        watcher.start()
        try:
            yield watcher, changes
        finally:
            await watcher.stop()


def ids(watcher: PoolWatcher) -> set[str]:
    return {r.id for r in watcher._members.replicas}


def run(scenario: Callable[[FakePoolApi], object], api: FakePoolApi | None = None) -> None:
    async def main() -> None:
        server = await (api or FakePoolApi()).start()
        try:
            await scenario(server)  # type: ignore[misc]
        finally:
            await server.stop()

    asyncio.run(main())


def test_lists_by_the_pools_selector_then_follows_pods_that_appear_turn_unready_and_go():
    async def scenario(api: FakePoolApi) -> None:
        await api.put_pod(pod("std-a", "standard", "10.0.0.1"))
        await api.put_pod(pod("other", "fast", "10.0.0.9", model="k3"))  # not in the pool
        async with watching(api) as (watcher, changes):
            assert {r.id for r in (await watcher.members()).replicas} == {"smollm2/standard/std-a"}
            await wait_for(lambda: len(api.watches()) == 1)
            (listed,), (watch,) = api.lists(), api.watches()
            assert listed["labelSelector"] == "duet.dev/model=smollm2"
            assert watch["resourceVersion"] == "102" and watch["allowWatchBookmarks"] == "true"
            assert watch["labelSelector"] == "duet.dev/model=smollm2"

            await api.put_pod(pod("fast-b", "fast", "10.0.0.2"))
            await wait_for(lambda: "smollm2/fast/fast-b" in ids(watcher))
            await api.put_pod(pod("fast-b", "fast", "10.0.0.2", ready=False))
            await wait_for(lambda: ids(watcher) == {"smollm2/standard/std-a"})
            await api.put_pod(pod("fast-c", "fast", "10.0.0.3"))
            await wait_for(lambda: len(ids(watcher)) == 2)
            await api.delete_pod("std-a")
            await wait_for(lambda: ids(watcher) == {"smollm2/fast/fast-c"})
            assert len(changes) == 5  # the first list, then each of the four events
            assert len(api.lists()) == 1 and watcher.rounds == 1  # all of it on one watch

            fast = await PoolVariantSource(watcher, "fast").list_replicas()
            assert [r.url for r in fast] == ["http://10.0.0.3:8000"]
            assert await PoolVariantSource(watcher, "standard").list_replicas() == ()

    run(scenario)


@pytest.mark.parametrize("as_status", [False, True], ids=["error-event", "http-status"])
def test_a_410_gone_lists_again_and_catches_up(as_status):
    async def scenario(api: FakePoolApi) -> None:
        api.gone_as_status = as_status
        await api.put_pod(pod("std-a", "standard", "10.0.0.1"))
        async with watching(api) as (watcher, _):
            await watcher.members()
            await wait_for(lambda: len(api.watches()) == 1)
            await api.put_pod(pod("fast-b", "fast", "10.0.0.2"))
            await wait_for(lambda: len(ids(watcher)) == 2)
            await api.expire()  # history compacted past what the watcher holds
            await api.delete_pod("std-a")
            if as_status:  # the open watch ends; the next one, from the old version, is refused
                await api.end_watches()
            await wait_for(lambda: watcher.rounds == 2)
            await wait_for(lambda: ids(watcher) == {"smollm2/fast/fast-b"})
            assert len(api.lists()) == 2

    run(scenario)


def test_the_list_is_redone_every_resync_s_even_without_a_410():
    async def scenario(api: FakePoolApi) -> None:
        await api.put_pod(pod("std-a", "standard", "10.0.0.1"))
        target = InferencePoolDiscovery("smollm2", "smollm2", NAMESPACE, engines=ENGINES, resync_s=0.2, watch_timeout_s=30)
        async with watching(api, target) as (watcher, changes):
            await wait_for(lambda: watcher.rounds >= 3)
            assert all(w["timeoutSeconds"] == "1" for w in api.watches())  # the watch ends by the resync
            assert len(changes) == 1  # relists of the same pods change nothing

    run(scenario)


def test_a_changed_selector_is_followed_after_the_watch_ends():
    async def scenario(api: FakePoolApi) -> None:
        await api.put_pod(pod("std-a", "standard", "10.0.0.1"))
        await api.put_pod(pod("k3-fast", "fast", "10.0.0.7", model="k3"))
        async with watching(api) as (watcher, _):
            await watcher.members()
            await wait_for(lambda: len(api.watches()) == 1)
            api.pool = pool(match_labels={"duet.dev/model": "k3"})
            await api.end_watches()
            await wait_for(lambda: ids(watcher) == {"smollm2/fast/k3-fast"})
            assert api.lists()[-1]["labelSelector"] == "duet.dev/model=k3"

    run(scenario)


def test_a_selector_that_matches_nothing_is_an_empty_pool_not_a_failure():
    async def scenario(api: FakePoolApi) -> None:
        await api.put_pod(pod("std-a", "standard", "10.0.0.1"))
        async with watching(api) as (watcher, changes):
            assert (await watcher.members()).replicas == ()
            assert changes == []

    run(scenario, FakePoolApi(pool(match_labels={"duet.dev/model": "nothing-here"})))


def test_a_missing_pool_is_a_failure_until_it_exists():
    async def scenario(api: FakePoolApi) -> None:
        await api.put_pod(pod("std-a", "standard", "10.0.0.1"))
        async with watching(api) as (watcher, _):
            with pytest.raises(DiscoveryFailed, match="HTTP 404"):
                await watcher.members()
            api.pool = pool()
            await wait_for(lambda: watcher.rounds == 1)
            assert ids(watcher) == {"smollm2/standard/std-a"}

    api = FakePoolApi()
    api.pool = None
    run(scenario, api)
