"""Several thousand requests wait for one-slot replicas, in process (the director with a real
waiting room, no HTTP): interactive ones go before batch ones, each class in arrival order,
every request is served or refused with Retry-After, and re-plans are counted, not timed."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from gateway.errors import RateLimited
from gateway.flow import Exchange
from gateway.outcome import Outcome
from tests.gateway.flow.test_director import CHAT, DEMO, Rig, Script, _full

REQUESTS = 3_000
ROOM = 2_500  # the rest are refused at once: the line is full


def test_thousands_waiting_go_by_priority_then_arrival_with_bounded_re_plans() -> None:
    async def scenario() -> dict[str, Any]:
        # The replicas are marked healthy once, at the start, and the store's clock stands still:
        # on the wall clock a loaded machine took longer than the demo's 5 s staleness and the
        # replicas read as unhealthy (NoHealthyReplica, blocked by 'healthy'). Health is not what
        # this test is about; the order and the re-plans are.
        rig = Rig(_full(DEMO), max_queued=ROOM, store_clock=lambda: 0.0)
        waited: list[float] = []
        rig.waiting._waited = waited.append
        await rig.up()
        replans = 0
        replan = rig.director.replan

        def counted(exchange: Exchange) -> None:
            nonlocal replans
            replans += 1
            replan(exchange)

        rig.director.replan = counted  # type: ignore[method-assign]
        holders = []
        for replica in rig.config.replicas:  # one request in flight fills each replica
            holder = rig.open(CHAT, {"x-duet-latency-budget-ms": "600000"})
            await rig.director.dispatch(holder, Script({r.id: 503 for r in rig.config.replicas if r.id != replica.id}))
            holders.append(holder)
        served: list[tuple[str, int]] = []
        refusals: list[RateLimited] = []

        async def request(index: int) -> None:
            priority = "batch" if index % 2 == 0 else "interactive"  # batch first in every pair
            # Budgets long enough that no one's deadline (the TTFT budget: chat's default is 2 s)
            # passes while the line drains, however slow the machine: the test is about order.
            exchange = rig.open(CHAT, {"x-duet-latency-budget-ms": "600000", "x-duet-ttft-budget-ms": "600000",
                                       "x-duet-priority": priority})
            try:
                await rig.director.admit(exchange)
            except RateLimited as refused:
                refusals.append(refused)
                return
            served.append((priority, index))
            await rig.director.dispatch(exchange, Script({}))
            await asyncio.sleep(0)  # served in a moment, then its slot frees
            assert exchange.attempt is not None
            await rig.director.finish(exchange, Outcome(exchange.attempt.replica.id, True, 200, 0.01, 0.02, 10, 5))

        tasks = [asyncio.create_task(request(i)) for i in range(REQUESTS)]
        while len(rig.waiting) + len(refusals) < REQUESTS:
            if errors := [error for task in tasks if task.done() and (error := task.exception())]:
                raise errors[0]  # a request that neither waits nor is refused: say why, do not spin
            await asyncio.sleep(0)
        queued, replans, started = len(rig.waiting), 0, time.monotonic()
        for holder in holders:
            assert holder.attempt is not None
            await rig.director.finish(holder, Outcome(holder.attempt.replica.id, True, 200, 0.01, 0.02, 10, 5))
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        return {"served": served, "refusals": refusals, "queued": queued, "replans": replans, "waited": waited,
                "drain_s": time.monotonic() - started}

    result = asyncio.run(scenario())
    served, refusals = result["served"], result["refusals"]
    assert result["queued"] == ROOM and len(served) == ROOM and len(refusals) == REQUESTS - ROOM, {str(r) for r in refusals}
    assert all(r.status == 429 and r.retry_after_s for r in refusals)
    classes = [priority for priority, _ in served]
    assert classes == ["interactive"] * classes.count("interactive") + ["batch"] * classes.count("batch")
    for name in ("interactive", "batch"):
        arrivals = [index for priority, index in served if priority == name]
        assert arrivals == sorted(arrivals)
    # One re-plan per request let go, plus the first in line's re-checks (four a second): polling
    # every waiter every 0.25 s would be ~10,000 a second here.
    assert result["replans"] <= ROOM + 4 * result["drain_s"] + 10, result
    assert len(result["waited"]) == ROOM
