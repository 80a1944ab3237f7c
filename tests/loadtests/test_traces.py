import pytest

from loadtests.traces import Trace, TraceRequest, clip_lengths, load_trace, replay_arrivals, task_traces


def trace(*offsets):
    return Trace("t", tuple(TraceRequest(o, 100 + i, 10 + i) for i, o in enumerate(offsets)))


def test_shipped_traces_load_with_the_readme_counts():
    assert len(load_trace("code").requests) == 8819
    assert len(load_trace("conv").requests) == 19366
    conv = load_trace("conv")
    assert conv.requests[0].offset_s == 0.0
    assert all(a.offset_s <= b.offset_s for a, b in zip(conv.requests, conv.requests[1:], strict=False))
    assert 5.0 < conv.rate_per_s < 6.0


def test_task_traces_map_code_to_coding_and_conv_to_chat():
    assert set(task_traces(["code", "conv"])) == {"coding", "chat"}


@pytest.mark.parametrize(
    ("time_scale", "rate_scale", "expected_at"),
    [
        (1.0, 1.0, [0.0, 1.0, 2.0, 3.0]),
        (2.0, 1.0, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]),  # compressed: twice the arrivals per wall second
        (1.0, 2.0, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]),
        (1.0, 0.5, [0.0, 2.0]),
    ],
)
def test_replay_scales_arrival_times(time_scale, rate_scale, expected_at):
    arrivals = replay_arrivals({"chat": trace(*range(10))}, duration_s=4, time_scale=time_scale, rate_scale=rate_scale)
    assert [a.at_s for a in arrivals] == expected_at
    assert {a.task for a in arrivals} == {"chat"}


def test_replay_starts_inside_the_trace_and_wraps_around_its_end():
    arrivals = replay_arrivals({"chat": trace(0, 1, 2)}, duration_s=4, start_s=2)
    # period = 2 s of trace + one mean gap (3 requests in 2 s -> 2/3 s): request 2 at 0, then the trace again
    assert [a.at_s for a in arrivals] == pytest.approx([0.0, 2 / 3, 5 / 3, 8 / 3, 10 / 3])
    assert [a.input_tokens for a in arrivals] == [102, 100, 101, 102, 100]


def test_replay_merges_tasks_in_time_order():
    arrivals = replay_arrivals({"coding": trace(0.5, 2.5), "chat": trace(0, 1, 2)}, duration_s=2.6)
    assert [(a.at_s, a.task) for a in arrivals] == [(0, "chat"), (0.5, "coding"), (1, "chat"), (2, "chat"), (2.5, "coding")]


@pytest.mark.parametrize(
    ("lengths", "window", "expected"),
    [((100, 50), 4096, (100, 50)), ((9000, 50), 4096, (3982, 50)), ((100, 5000), 4096, (100, 2048)), ((0, 0), 4096, (1, 1))],
)
def test_clip_lengths_fits_the_window(lengths, window, expected):
    assert clip_lengths(*lengths, window) == expected
