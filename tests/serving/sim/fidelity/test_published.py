"""The published H100 measurements as scenarios: the data file is complete and consistent, a
scenario runs as described, and the profiles stay fitted to the speculative curves."""

from __future__ import annotations

import dataclasses

import pytest

from serving.sim.fidelity.published import METRICS, SPEEDUPS, PublishedPoint, Scenario, load_points, load_rows, serve, simulate
from serving.sim.parallel import load_profile


def test_every_point_names_a_known_metric_row_and_profile() -> None:
    sources, rows = load_rows()
    numbers = {row["row"]: row for row in rows}
    points = load_points()
    assert len(numbers) == 18 and {p.row for p in points} == set(numbers)
    for point in points:
        assert point.metric in METRICS or point.metric in SPEEDUPS
        assert numbers[point.row]["source"] in sources
        load_profile(point.scenario.profile)  # a derived ``-tpN`` one too: it must fit
        if point.scenario.base is not None:
            load_profile(point.scenario.base)
        assert (point.metric in SPEEDUPS) == (point.scenario.base is not None)


def test_one_request_alone_decodes_at_the_step_cost() -> None:
    profile = load_profile("h100-70b-bf16")
    still = dataclasses.replace(profile, step=dataclasses.replace(profile.step, jitter=0.0))
    (done,) = serve(still, Scenario("h100-70b-bf16", "chat", 100, 21, prompts=1), seed=0)
    tpot = METRICS["tpot_median_ms"]([done]) / 1000
    step = still.step
    assert tpot == pytest.approx(step.base_s + step.decode_s_per_token, rel=0.02)  # plus a little KV reading
    assert METRICS["output_tok_s"]([done]) == pytest.approx(21 / done.time)


def test_arrivals_at_a_rate_spread_over_time_and_all_at_once_share_time_zero() -> None:
    profile = load_profile("h100-70b-fp8")
    spread = serve(profile, Scenario("h100-70b-fp8", "chat", 200, 20, prompts=40, qps=4.0), seed=1)
    together = serve(profile, Scenario("h100-70b-fp8", "chat", 200, 20, prompts=40), seed=1)
    assert len(spread) == len(together) == 40
    assert max(d.time for d in spread) > 5.0  # 40 arrivals at 4/s take ~10 s to arrive
    assert max(d.time for d in together) < 2.0
    assert METRICS["ttft_p99_s"](together) > METRICS["ttft_p99_s"](spread)


def test_a_speed_up_needs_its_base() -> None:
    point = PublishedPoint(99, "x", Scenario("h100-70b-ngram", "chat", 10, 10, prompts=1), "speedup", 1.0, False)
    with pytest.raises(ValueError, match="base profile"):
        simulate(point)


@pytest.mark.parametrize("row", [7, 12, 13])
def test_the_profiles_stay_within_20_percent_of_the_rows_they_are_fitted_to(row: int) -> None:
    for point in (p for p in load_points() if p.row == row):
        assert point.fitted
        ratio = simulate(point) / point.published
        assert 0.8 <= ratio <= 1.2, f"row {row}, {point.label}: sim / published {ratio:.2f}"
