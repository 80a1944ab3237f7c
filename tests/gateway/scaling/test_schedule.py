"""A schedule floor: the replicas asked for by the time of day, wrapping over midnight, and the
schedule a day's per-period counts make when asked for ahead of time."""

import pytest

from gateway.scaling import FloorSchedule, ScheduleStep, schedule_from_counts


def test_a_step_holds_until_the_next_and_the_days_last_holds_before_its_first():
    schedule = FloorSchedule((ScheduleStep(6 * 3600.0, 3), ScheduleStep(18 * 3600.0, 5), ScheduleStep(22 * 3600.0, 2)))
    hours = (0, 5.99, 6, 12, 18, 21.99, 22, 23.99, 24 + 7)
    assert [schedule.at(h * 3600.0) for h in hours] == [2, 2, 3, 3, 5, 5, 2, 2, 3]
    assert schedule.most == 5


@pytest.mark.parametrize("steps", [(), (ScheduleStep(60.0, 1), ScheduleStep(60.0, 2)),
                                   (ScheduleStep(86400.0, 1),), (ScheduleStep(0.0, -1),)])
def test_an_empty_unordered_out_of_day_or_negative_schedule_is_refused(steps):
    with pytest.raises(ValueError):
        FloorSchedule(steps)


def test_counts_per_period_are_asked_for_lead_s_ahead_and_equal_neighbours_merge():
    # Four six-hour periods: 2, 2, 4, 3 serving; asked for 600 s before each period starts.
    schedule = schedule_from_counts([2, 2, 4, 3], 6 * 3600.0, 600.0)
    assert schedule.steps == (ScheduleStep(12 * 3600.0 - 600.0, 4), ScheduleStep(18 * 3600.0 - 600.0, 3),
                              ScheduleStep(86400.0 - 600.0, 2))
    for period, serving in enumerate([2, 2, 4, 3]):  # every period starts with its count asked for
        assert schedule.at(period * 6 * 3600.0) == serving
    assert schedule_from_counts([1, 1], 3600.0, 0.0).steps == (ScheduleStep(0.0, 1),)
