"""The demand meter: per-task rates over a window, in any clock."""

import pytest

from gateway.scaling import DemandMeter, Tally, TaskDemand, peak


def steady(meter, task, rate_per_s, start_s, end_s, prompt=100):
    at, gap = start_s, 1.0 / rate_per_s
    while at < end_s:
        meter.arrived(task, prompt, at)
        at += gap


def test_a_steady_rate_reads_as_itself_with_its_mean_prompt():
    meter = DemandMeter(horizon_s=120, started_s=0)
    steady(meter, "chat", 4.0, 0.0, 60.0)
    demand = meter.demand(60.0, 30.0)["chat"]
    assert demand.rate_per_s == pytest.approx(4.0, rel=0.05)
    assert demand.prompt_tokens == 100
    assert demand.output_tokens is None


def test_a_rate_step_shows_fully_in_the_window_one_scrape_after_it():
    meter = DemandMeter(horizon_s=120, started_s=0)
    steady(meter, "chat", 2.0, 0.0, 100.0)
    steady(meter, "chat", 10.0, 100.0, 115.0)
    assert meter.demand(115.0, 15.0)["chat"].rate_per_s == pytest.approx(10.0, rel=0.05)
    assert meter.demand(115.0, 120.0)["chat"].rate_per_s < 4.0  # the long window still remembers the lull


def test_a_young_meter_divides_by_the_time_it_has_seen_not_the_window():
    meter = DemandMeter(horizon_s=120, started_s=50.0)
    steady(meter, "coding", 5.0, 50.0, 60.0)
    assert meter.demand(60.0, 120.0)["coding"].rate_per_s == pytest.approx(5.0, rel=0.1)


def test_answers_give_the_mean_output_and_old_buckets_are_forgotten():
    meter = DemandMeter(horizon_s=10, started_s=0)
    meter.arrived("chat", 10, 1.0)
    meter.answered("chat", 30, 2.0)
    meter.answered("chat", 50, 3.0)
    assert meter.demand(5.0, 10.0)["chat"].output_tokens == 40
    meter.arrived("coding", 10, 40.0)  # a new bucket prunes everything older than the horizon
    assert set(meter.demand(40.5, 10.0)) == {"coding"}


def test_counting_totals_at_once_reads_as_counting_each_request():
    one_by_one, at_once = DemandMeter(horizon_s=60, started_s=0), DemandMeter(horizon_s=60, started_s=0)
    for _ in range(6):
        one_by_one.arrived("chat", 50, 3.2)
    one_by_one.answered("chat", 20, 3.5)
    one_by_one.answered("chat", 40, 3.5)
    at_once.count("chat", 3.2, Tally(arrivals=6, prompt_tokens=300, answered=2, output_tokens=60))
    assert at_once.demand(10.0, 60.0) == one_by_one.demand(10.0, 60.0)


@pytest.mark.parametrize(("short", "long", "expected"), [
    # a burst: the short window's rate and prompt, the long window's answer while none finished in the burst
    (TaskDemand(10.0, 300.0, None), TaskDemand(3.0, 100.0, 80.0), TaskDemand(10.0, 300.0, 80.0)),
    # a lull: the long window's demand, whole
    (TaskDemand(1.0, 50.0, 20.0), TaskDemand(3.0, 100.0, 80.0), TaskDemand(3.0, 100.0, 80.0)),
    # nothing in the short window: the long one
    (None, TaskDemand(3.0, 100.0, 80.0), TaskDemand(3.0, 100.0, 80.0)),
])
def test_the_peak_takes_per_task_the_window_with_the_higher_rate(short, long, expected):
    assert peak({} if short is None else {"chat": short}, {"chat": long}) == {"chat": expected}


def test_a_window_read_on_a_bucket_boundary_counts_its_first_bucket():
    meter = DemandMeter(horizon_s=120, started_s=0)
    steady(meter, "chat", 4.0, 0.0, 100.0)
    assert meter.demand(100.0, 1.0)["chat"].rate_per_s == pytest.approx(4.0)
    assert meter.demand(100.0, 15.0)["chat"].rate_per_s == pytest.approx(4.0)
