import pytest

from loadtests.load.shapes import Stage, ramp_stage, step_stage, trace_done


@pytest.mark.parametrize(
    ("elapsed", "expected"),
    [(0, Stage(10, 10.0)), (29.9, Stage(10, 10.0)), (30, Stage(20, 10.0)), (95, Stage(40, 10.0)), (1000, Stage(50, 10.0))],
)
def test_step_adds_users_each_step_up_to_the_cap(elapsed, expected):
    assert step_stage(elapsed, step_users=10, step_s=30, max_users=50) == expected


@pytest.mark.parametrize(("elapsed", "users"), [(0, 1), (15, 25), (30, 50), (59, 99), (60, 100), (500, 100)])
def test_ramp_grows_linearly_then_holds(elapsed, users):
    assert ramp_stage(elapsed, peak_users=100, ramp_s=60).users == users


@pytest.mark.parametrize(
    ("elapsed", "last", "outstanding", "done"),
    [
        (5, 10, 0, False),  # arrivals still to come
        (11, 10, 3, False),  # answers still coming
        (11, 10, 0, True),
        (200, 10, 3, True),  # drained long enough
    ],
)
def test_trace_replay_ends_when_drained(elapsed, last, outstanding, done):
    assert trace_done(elapsed, last, outstanding, drain_s=120) is done
