"""What traffic a model gets: arrivals per task type over a window, with their mean prompt and
answer, counted in one-second buckets (memory bounded by the longest window, not the rate)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TaskDemand:
    """One task type's traffic over a window: arrivals per second, their mean prompt tokens, and
    the mean answer of the requests that finished in it (None: none did yet)."""

    rate_per_s: float
    prompt_tokens: float
    output_tokens: float | None = None


@dataclass(frozen=True, slots=True)
class Tally:
    """Totals of some requests of one task type: arrivals and their prompt tokens, answers and
    their output tokens."""

    arrivals: int = 0
    prompt_tokens: int = 0
    answered: int = 0
    output_tokens: int = 0


def peak(short: Mapping[str, TaskDemand], long: Mapping[str, TaskDemand]) -> dict[str, TaskDemand]:
    """Per task type, the demand of whichever window had the higher rate (a burst raises it at
    once, a lull lowers it only once the long window has forgotten the traffic before it); its
    mean answer from the long window when none finished in the short one."""
    merged = dict(long)
    for task, fast in short.items():
        slow = long.get(task)
        if slow is None:
            merged[task] = fast
        elif fast.rate_per_s > slow.rate_per_s:
            answer = slow.output_tokens if fast.output_tokens is None else fast.output_tokens
            merged[task] = TaskDemand(fast.rate_per_s, fast.prompt_tokens, answer)
    return dict(sorted(merged.items()))


class _Bucket:
    __slots__ = ("answered", "arrivals", "output_tokens", "prompt_tokens")

    def __init__(self) -> None:
        self.arrivals = self.prompt_tokens = self.answered = self.output_tokens = 0


class DemandMeter:
    """Arrivals and answers per task type for the last ``horizon_s`` seconds. One per model, held
    by whoever owns the model's traffic (the gateway's runtime, a replay); the caller passes the
    time, so the meter runs in wall or virtual time alike."""

    def __init__(self, horizon_s: float, started_s: float, bucket_s: float = 1.0) -> None:
        if horizon_s <= 0 or bucket_s <= 0:
            raise ValueError("horizon_s and bucket_s must be > 0")
        self._horizon_s, self._bucket_s, self._started_s = horizon_s, bucket_s, started_s
        self._buckets: dict[int, dict[str, _Bucket]] = {}

    def arrived(self, task: str, prompt_tokens: int, now: float) -> None:
        self.count(task, now, Tally(arrivals=1, prompt_tokens=prompt_tokens))

    def answered(self, task: str, output_tokens: int, now: float) -> None:
        self.count(task, now, Tally(answered=1, output_tokens=output_tokens))

    def count(self, task: str, now: float, tally: Tally) -> None:
        """Add several requests' totals at once (a shared store's per-second counts)."""
        bucket = self._bucket(task, now)
        bucket.arrivals += tally.arrivals
        bucket.prompt_tokens += tally.prompt_tokens
        bucket.answered += tally.answered
        bucket.output_tokens += tally.output_tokens

    def demand(self, now: float, window_s: float) -> dict[str, TaskDemand]:
        """Each task type's demand over the last ``window_s`` seconds (at most the horizon; at
        most the time since the meter started, so a young gateway does not under-count)."""
        span_s = min(window_s, self._horizon_s, now - self._started_s)
        # Whole buckets inside the window (one starting at its start included), the current one up
        # to now: divided by the time they cover.
        first = min(math.ceil((now - span_s) / self._bucket_s), self._index(now))
        span_s = max(now - first * self._bucket_s, self._bucket_s)
        totals: dict[str, list[int]] = {}
        for index, tasks in self._buckets.items():
            if index < first:
                continue
            for task, b in tasks.items():
                total = totals.setdefault(task, [0, 0, 0, 0])
                total[0] += b.arrivals
                total[1] += b.prompt_tokens
                total[2] += b.answered
                total[3] += b.output_tokens
        return {task: TaskDemand(arrivals / span_s, prompt / arrivals if arrivals else 0.0,
                                 output / answered if answered else None)
                for task, (arrivals, prompt, answered, output) in sorted(totals.items()) if arrivals or answered}

    def _bucket(self, task: str, now: float) -> _Bucket:
        index = self._index(now)
        if index not in self._buckets:
            self._prune(index)
            self._buckets[index] = {}
        return self._buckets[index].setdefault(task, _Bucket())

    def _prune(self, newest: int) -> None:
        oldest = newest - math.ceil(self._horizon_s / self._bucket_s)
        for index in [i for i in self._buckets if i < oldest]:
            del self._buckets[index]

    def _index(self, at_s: float) -> int:
        return math.floor(at_s / self._bucket_s)
