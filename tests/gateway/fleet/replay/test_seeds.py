"""Several seeds of one setting: shifted windows, means and 95% intervals."""

from __future__ import annotations

import json
import statistics

import pytest

from gateway.fleet.replay.seeds import combine, interval, start_for, t95


@pytest.mark.parametrize(("degrees", "expected"), [(1, 12.706), (4, 2.776), (12, 2.228), (25, 2.086), (100, 1.96)])
def test_t_quantiles_are_the_table_value_at_or_below_the_degrees(degrees, expected):
    assert t95(degrees) == expected


def test_the_interval_is_t_times_the_standard_error_and_zero_for_one_value():
    values = [0.98, 0.99, 0.97, 0.985, 0.995]
    mean, half = interval(values)
    assert mean == pytest.approx(statistics.fmean(values))
    assert half == pytest.approx(2.776 * statistics.stdev(values) / 5 ** 0.5)
    assert interval([0.5]) == (0.5, 0.0)


def test_each_seed_shifts_the_window():
    assert [start_for(k, 1260, 60) for k in range(3)] == [1260, 1320, 1380]
    assert start_for(4, 2340, -60) == 2100


def summary(good, cost, mix):
    return {"good_fraction": good, "cost_usd": cost, "slo_attainment": good, "quality_misses": 0, "rejected": 1,
            "variant_mix": mix, "ttft_ms": {"p50": 100.0, "p90": None}, "wall_s": 2.0, "requests": 10}


def test_combine_averages_every_number_and_adds_intervals():
    merged = combine([summary(0.98, 6.0, {"fast": 1.0}), summary(0.99, 7.0, {"fast": 0.5, "standard": 0.5})])
    assert merged["good_fraction"] == 0.985 and merged["cost_usd"] == 6.5 and merged["seeds"] == 2
    assert merged["good_fraction_ci95"] == pytest.approx(12.706 * statistics.stdev([0.98, 0.99]) / 2 ** 0.5, abs=1e-4)
    assert merged["variant_mix"] == {"fast": 0.75, "standard": 0.25}  # a seed that never used a variant counts 0%
    assert merged["ttft_ms"] == {"p50": 100.0, "p90": None} and merged["wall_s"] == 4.0
    assert merged["runs"] == [{"good_fraction": 0.98, "cost_usd": 6.0}, {"good_fraction": 0.99, "cost_usd": 7.0}]


def test_replay_seeds_shift_arrivals_and_write_intervals(tmp_path):
    from gateway.cli import main

    out = tmp_path / "r.json"
    assert main(["replay", "--duration", "30", "--rate-scale", "0.2", "--seeds", "3", "--shift", "20", "--json",
                 "--policy", "least-loaded", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["command"].endswith("--seed 0 --seeds 3 --shift 20 --prior-error 0.3")
    assert result["seeds"]["count"] == 3 and len(set(map(str, result["seeds"]["requests"]))) > 1
    policy = result["policies"]["least-loaded"]
    assert policy["seeds"] == 3 and len(policy["runs"]) == 3 and policy["good_fraction_ci95"] >= 0


def test_the_ttft_p90_gets_an_interval_when_every_seed_has_one():
    runs = [summary(0.98, 6.0, {"fast": 1.0}) | {"ttft_ms": {"p50": 1.0, "p90": p90}} for p90 in (900.0, 1100.0)]
    assert combine(runs)["ttft_p90_ms_ci95"] == pytest.approx(12.706 * statistics.stdev([900.0, 1100.0]) / 2 ** 0.5, abs=0.1)
    assert "ttft_p90_ms_ci95" not in combine([summary(0.98, 6.0, {"fast": 1.0})] * 2)  # a seed without one
