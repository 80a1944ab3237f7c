import asyncio

import pytest

from gateway.errors import RateLimited
from gateway.flow.waiting_room import WaitingRoom, place_in_line


def test_higher_priority_is_woken_first_then_fifo():
    async def scenario():
        queue = WaitingRoom(max_waiting=10)
        order = []

        async def waiter(name, rank):
            await queue.wait(rank, 5.0)
            order.append(name)

        arrivals = (("batch-1", 1), ("inter-1", 0), ("batch-2", 1), ("inter-2", 0))
        tasks = [asyncio.create_task(waiter(n, place_in_line(r, i))) for i, (n, r) in enumerate(arrivals)]
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


def test_a_wake_that_comes_between_a_deadline_and_its_task_goes_to_the_next_in_line():
    """The deadline cancels the first waiter's future at once, but it leaves the line only when its
    task runs again; a request finishing in between wakes the line (found under load by
    test_overload: InvalidStateError out of finish)."""
    async def scenario():
        queue = WaitingRoom(max_waiting=10)
        first = asyncio.create_task(queue.wait(place_in_line(0, 0), 60.0))
        second = asyncio.create_task(queue.wait(place_in_line(0, 1), 60.0))
        while len(queue) < 2:
            await asyncio.sleep(0)
        first.cancel()  # what a deadline does: the task's future is cancelled now, its except runs later
        queue.wake()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await second is True
        assert len(queue) == 0

    asyncio.run(scenario())


def test_full_queue_refuses_at_once():
    async def scenario():
        queue = WaitingRoom(max_waiting=1)
        first = asyncio.create_task(queue.wait(0, 5.0))
        await asyncio.sleep(0)
        with pytest.raises(RateLimited, match="queue is full"):
            await queue.wait(1, 5.0)
        queue.wake()
        await first

    asyncio.run(scenario())


async def _until(condition):
    while not condition():
        await asyncio.sleep(0.001)


async def _steps_back(queue, place, woken, times=10**6):
    """A waiter woken ``times`` times before it finds a slot (it steps back into its place)."""
    while True:
        if await queue.wait(place, 5.0):
            woken.append(place)
            if times == 0:
                return
            times -= 1


def test_only_the_first_in_line_re_checks_on_the_timer():
    async def scenario():
        queue = WaitingRoom(max_waiting=10, recheck_s=0.01)
        woken = []
        tasks = [asyncio.create_task(_steps_back(queue, place_in_line(0, i), woken)) for i in range(3)]
        await _until(lambda: len(woken) >= 10)  # ten re-checks, each of the first in line only
        assert set(woken) == {place_in_line(0, 0)}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert len(queue) == 0

    asyncio.run(scenario())


def test_a_wake_the_first_cannot_use_moves_down_the_line():
    async def scenario():
        waited = []
        queue = WaitingRoom(max_waiting=10, waited=waited.append, recheck_s=60.0)
        woken = []
        first = asyncio.create_task(_steps_back(queue, place_in_line(0, 0), woken))
        second = asyncio.create_task(_steps_back(queue, place_in_line(0, 1), woken, times=0))
        third = asyncio.create_task(_steps_back(queue, place_in_line(0, 2), woken, times=0))
        await _until(lambda: len(queue) == 3)
        # A finish: the first re-checks and stays (its slot was elsewhere), the wake goes on to the second.
        queue.wake()
        await asyncio.wait_for(second, 1.0)
        assert woken == [place_in_line(0, 0), place_in_line(0, 1)]
        assert not third.done() and len(waited) == 1 and len(queue) == 2
        for task in (first, third):
            task.cancel()
        await asyncio.gather(first, third, return_exceptions=True)
        assert len(queue) == 0 and len(waited) == 3

    asyncio.run(scenario())


def test_the_depth_gauge_and_the_wait_histogram():
    from gateway.telemetry import Telemetry

    async def scenario():
        telemetry = Telemetry()
        queue = WaitingRoom(max_waiting=10, waited=telemetry.queue_wait.observe)
        telemetry.watch_waiting(lambda: len(queue))
        waiter = asyncio.create_task(queue.wait(place_in_line(0, 0), 5.0))
        while len(queue) < 1:
            await asyncio.sleep(0)
        assert b"duet_waiting_requests 1.0" in telemetry.render()
        queue.wake()
        await waiter
        await asyncio.sleep(0)  # it did not step back: it left the line
        text = telemetry.render()
        assert b"duet_waiting_requests 0.0" in text and b"duet_queue_wait_seconds_count 1.0" in text

    asyncio.run(scenario())


def test_the_re_check_timer_runs_on_each_event_loop_the_room_is_used_in():
    queue = WaitingRoom(max_waiting=10, recheck_s=0.01)

    async def head_re_checks() -> bool:
        return await queue.wait(place_in_line(0, 0), 5.0)

    async def abandoned() -> None:
        waiter = asyncio.create_task(queue.wait(place_in_line(0, 1), 5.0))
        await asyncio.sleep(0)
        waiter.cancel()  # the loop ends with the timer armed

    asyncio.run(abandoned())
    assert asyncio.run(head_re_checks()) is True
