"""The tuning window and the held-out one stay apart, inside the shipped Azure traces."""

from __future__ import annotations

from gateway.fleet.replay.windows import HELDOUT, SEEDS, TUNING
from gateway.fleet.workload.traces import task_traces


def test_the_held_out_seeds_never_touch_the_tuning_seeds_trace_seconds():
    tuning, heldout = TUNING.covered(SEEDS), HELDOUT.covered(SEEDS)
    assert tuning == (0.0, 1440.0)
    assert heldout[0] >= tuning[1]


def test_the_held_out_window_ends_inside_every_azure_trace():
    for trace in task_traces(["code", "conv"]).values():
        assert HELDOUT.covered(SEEDS)[1] <= trace.duration_s
