import asyncio

import pytest

from gateway.errors import RateLimited
from gateway.flow.waiting_room import WaitingRoom


def test_higher_priority_is_woken_first_then_fifo():
    async def scenario():
        queue = WaitingRoom(max_waiting=10)
        order = []

        async def waiter(name, rank):
            await queue.wait(rank, 5.0)
            order.append(name)

        tasks = [asyncio.create_task(waiter(n, r)) for n, r in (("batch-1", 1), ("inter-1", 0), ("batch-2", 1), ("inter-2", 0))]
        while len(queue) < 4:
            await asyncio.sleep(0)
        for _ in range(4):
            queue.wake()
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["inter-1", "inter-2", "batch-1", "batch-2"]


def test_a_timeout_returns_false_and_leaves_the_queue():
    async def scenario():
        queue = WaitingRoom(max_waiting=10)
        assert await queue.wait(0, 0.05) is False
        assert len(queue) == 0

    asyncio.run(scenario())


def test_full_queue_refuses_at_once():
    async def scenario():
        queue = WaitingRoom(max_waiting=1)
        first = asyncio.create_task(queue.wait(0, 5.0))
        await asyncio.sleep(0)
        with pytest.raises(RateLimited, match="queue is full"):
            await queue.wait(0, 5.0)
        queue.wake()
        await first

    asyncio.run(scenario())
