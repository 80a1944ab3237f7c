"""docs/routing.md's length-quantile table: what it is rendered from and how (the committed table is
checked with every section by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

from loadtests.benchmarks.length_quantile import render as docs


def test_the_committed_replays_cover_every_quantile_and_window():
    results = docs.load()
    assert {r["quantile"] for r in results} >= {0.1, 0.25, 0.5, 0.75}
    assert {r["start"] for r in results} == {0.0, 1260.0, 2340.0}


def replay(quantile, start, good, cost):
    option = "" if quantile == 0.5 else f" --length-quantile {quantile:g}"
    return {"command": f"duet replay --policy duet --start {start:g}{option}", "quantile": quantile, "start": start,
            "policies": {"duet": {"good_fraction": good, "cost_usd": cost}}}


def test_rows_are_quantiles_and_columns_windows():
    text = docs.render([replay(0.5, 0.0, 0.9874, 6.63), replay(0.1, 0.0, 0.9872, 6.7), replay(0.1, 1260.0, 0.99, 7.0)])
    assert "| planned at | tuning window (start 0) | held out (start 1260) |" in text
    assert "| p10 | 98.72% / $6.70 | 99.00% / $7.00 |" in text
    assert "| p50 (kept) | 98.74% / $6.63 | – |" in text


def test_with_seeds_the_difference_is_paired_seed_by_seed():
    def seeded(quantile, goods, costs):
        result = replay(quantile, 0.0, sum(goods) / len(goods), sum(costs) / len(costs))
        result["policies"]["duet"]["runs"] = [{"good_fraction": g, "cost_usd": c} for g, c in zip(goods, costs, strict=True)]
        return result

    # every seed gains exactly 0.5 points: the pairing removes the seeds' own spread
    low = seeded(0.1, [0.905, 0.955, 0.985], [10.0, 20.0, 30.0])
    kept = seeded(0.5, [0.900, 0.950, 0.980], [10.0, 20.0, 30.0])
    (line,) = docs.against_kept([low, kept], [0.1, 0.5], [0.0])
    assert line == "- p10 against p50, window by window: +0.50 ± 0.00 points of good requests, cost +0.0% ± 0.00%."
