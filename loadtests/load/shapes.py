"""Load shapes: how many users run, second by second.

Locust uses the one ``LoadTestShape`` a locustfile defines, so there is one, ``DuetShape`` in
``loadtests/load/locustfile.py``, and ``--duet-shape`` picks its plan. The plans are here, as pure
functions of elapsed time (tested without importing locust, whose import monkey-patches the process):

- ``users``: locust's usual ``-u`` / ``-r`` (and ``-t``) with the task users;
- ``trace``: ``--duet-trace-users`` replay users take the trace's arrivals at their (scaled)
  times; the test ends when the schedule is spent and the last answer is in, or 120 s (model time,
  divided by the time scale) of draining later;
- ``step``: ``--duet-step-users`` more every ``--duet-step-seconds``, up to ``-u``;
- ``ramp``: linear from 0 to ``-u`` over ``--duet-ramp-seconds``, then held.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DRAIN_MODEL_S = 120.0


@dataclass(frozen=True, slots=True)
class Stage:
    """Users wanted now and how fast to get there (users per second)."""

    users: int
    spawn_rate: float


def step_stage(elapsed_s: float, step_users: int, step_s: float, max_users: int) -> Stage:
    """``step_users`` at start, ``step_users`` more after each ``step_s``, capped at ``max_users``."""
    steps = int(elapsed_s // step_s) + 1
    return Stage(min(max_users, steps * step_users), float(max(1, step_users)))


def ramp_stage(elapsed_s: float, peak_users: int, ramp_s: float) -> Stage:
    """Users growing linearly to ``peak_users`` over ``ramp_s`` seconds, then held."""
    if ramp_s <= 0 or elapsed_s >= ramp_s:
        return Stage(peak_users, float(max(1, peak_users)))
    users = max(1, math.ceil(peak_users * elapsed_s / ramp_s))
    return Stage(users, max(1.0, peak_users / ramp_s))


def trace_done(elapsed_s: float, last_arrival_s: float, outstanding: int, drain_s: float) -> bool:
    """A replay is over once the last arrival is due and nothing taken from the schedule is still
    waiting or running (``outstanding``), or ``drain_s`` after the last arrival whatever remains."""
    if elapsed_s < last_arrival_s:
        return False
    return outstanding == 0 or elapsed_s > last_arrival_s + drain_s
