"""fcfs and priority scheduling: where a request joins the waiting queue and whom a sequence
that needs KV blocks preempts."""

from __future__ import annotations

from collections import deque

import pytest

from serving.sim.engine.events import SimRequest
from serving.sim.engine.scheduling_order import SchedulingOrder
from serving.sim.engine.sequence import Seq


def seq(name: str, arrival: float, priority: int = 0) -> Seq:
    return Seq(SimRequest(name, 10, 10, priority=priority), arrival, arrival, 10)


def test_fcfs_queues_new_requests_last_and_preempted_ones_first_and_preempts_the_last_admitted():
    order, waiting = SchedulingOrder.named("fcfs"), deque([seq("a", 0.0)])
    order.enqueue(waiting, seq("b", 1.0), front=False)
    order.enqueue(waiting, seq("c", 2.0), front=True)
    assert [s.req.request_id for s in waiting] == ["c", "a", "b"]
    running = [seq("x", 0.0, priority=5), seq("y", 1.0)]
    assert order.victim(running).req.request_id == "y"


def test_priority_keeps_the_queue_by_priority_then_arrival_and_preempts_the_largest():
    order, waiting = SchedulingOrder.named("priority"), deque()
    for name, arrival, priority in (("late-urgent", 3.0, 0), ("early-batch", 1.0, 5), ("early-urgent", 0.0, 0)):
        order.enqueue(waiting, seq(name, arrival, priority), front=False)
    order.enqueue(waiting, seq("preempted", 2.0, 0), front=True)  # back at its place, not the head
    assert [s.req.request_id for s in waiting] == ["early-urgent", "preempted", "late-urgent", "early-batch"]
    running = [seq("batch", 0.0, priority=5), seq("urgent", 1.0)]
    assert order.victim(running).req.request_id == "batch"


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown scheduling policy 'lifo'"):
        SchedulingOrder.named("lifo")
