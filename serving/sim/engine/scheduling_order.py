"""The order vLLM's scheduler serves waiting requests in and the running one it preempts for KV
blocks, by ``--scheduling-policy``: ``fcfs`` (arrival order; a preempted sequence goes back to
the head of the queue; the last admitted is preempted first) or ``priority`` (by (``priority``,
arrival), a preempted sequence back at its place in that order; the running sequence with the
largest (``priority``, arrival) is preempted, as V1 does)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from serving.sim.engine.sequence import Seq

POLICIES = ("fcfs", "priority")


@dataclass(frozen=True, slots=True)
class SchedulingOrder:
    by_priority: bool = False

    @classmethod
    def named(cls, policy: str) -> SchedulingOrder:
        if policy not in POLICIES:
            raise ValueError(f"unknown scheduling policy '{policy}' (fcfs or priority)")
        return cls(policy == "priority")

    def victim(self, running: list[Seq]) -> Seq:
        """The running sequence to preempt so that another gets blocks (``running`` non-empty,
        in admission order)."""
        if self.by_priority:
            return max(running, key=lambda s: (s.req.priority, s.arrival))
        return running[-1]

    def enqueue(self, waiting: deque[Seq], seq: Seq, *, front: bool) -> None:
        """Into the waiting queue: at the back (a new request) or the front (a preempted one),
        or under priority scheduling at its place by (priority, arrival)."""
        if not self.by_priority:
            if front:
                waiting.appendleft(seq)
            else:
                waiting.append(seq)
            return
        rank = (seq.req.priority, seq.arrival)
        at = len(waiting)
        while at > 0 and (waiting[at - 1].req.priority, waiting[at - 1].arrival) > rank:
            at -= 1
        waiting.insert(at, seq)
