"""The trace windows a sweep replays, named once: the tuning window Duet's policy was tuned on and
the held-out window it never saw (issue #26: keep them apart).

A window is in trace seconds: seed ``k`` replays ``[start + k x shift, start + k x shift +
span)``, at every load (a load of 2 replays the same requests in half the time), so a sweep's
loads differ only in how fast the same arrivals come. The Azure traces run ~3,440 s.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Window:
    """Trace seconds ``[start_s, start_s + span_s)`` for seed 0, each further seed ``shift_s`` later."""

    name: str
    start_s: float
    span_s: float
    shift_s: float = 60.0

    def start_for(self, seed_index: int) -> float:
        return self.start_s + seed_index * self.shift_s

    def covered(self, seeds: int) -> tuple[float, float]:
        """The trace seconds ``seeds`` seeds cover together: [first start, last end)."""
        starts = [self.start_for(k) for k in range(seeds)]
        return min(starts), max(starts) + self.span_s


TUNING = Window("tuning", 0.0, 1200.0)
HELDOUT = Window("heldout", 1500.0, 1200.0)
WINDOWS = {w.name: w for w in (TUNING, HELDOUT)}
# Where a tuning day's periods start (``duet plan-day``): inside the tuning window, early enough
# that a period at the day's peak (15 minutes at load 0.5: 450 trace seconds) ends before the
# held-out window's 1,500 s.
TUNING_DAY = Window("tuning", 0.0, 1000.0)
DAY_WINDOWS = {"heldout": HELDOUT, "tuning": TUNING_DAY}
# Seeds the named windows are laid out for: five seeds of the tuning window end at 1,440 s and
# five of the held-out one start at 1,500 s, and end at 2,940 s, inside every shipped Azure trace.
SEEDS = 5
