"""vLLM serve_sla constraints: what parses, what is refused with the key named, and the statistics
they are checked against."""

from __future__ import annotations

import json
import math

import pytest

from gateway.fleet.replay.request_result import RequestResult
from gateway.fleet.sweep.sla import Constraint, SlaError, load, measure, parse, percentile


def test_vllm_constraints_parse_as_one_set_or_a_list_of_sets():
    (one,) = parse({"p99_e2el_ms": "<=500", "median_ttft_ms": "< 300", "mean_tpot_ms": "<=50", "p99.9_ttft_ms": "<=900"})
    assert one.constraints == (Constraint("p99_e2el_ms", "<=", 500), Constraint("median_ttft_ms", "<", 300),
                               Constraint("mean_tpot_ms", "<=", 50), Constraint("p99.9_ttft_ms", "<=", 900))
    first, second = parse([{"p99_e2el_ms": "<=500"}, {"good_fraction": ">=0.99"}])
    assert first.text == "p99_e2el_ms<=500" and second.text == "good_fraction>=0.99"


@pytest.mark.parametrize(("data", "message"), [
    ({"p99_e2el_ms": 500}, "sla.p99_e2el_ms: expected a string"),
    ({"p99_e2el_ms": "=500"}, "sla.p99_e2el_ms: '=500': p99_e2el_ms is a latency bounded from above"),
    ({"p99_e2el_ms": ">=500"}, "use <= or <"),
    ({"p99_e2el_ms": "<=fast"}, "sla.p99_e2el_ms: '<=fast': not a number after '<='"),
    ({"p99_latency": "<=500"}, "sla.p99_latency: unknown metric"),
    ({"request_throughput": ">=5"}, "sla.request_throughput: unknown metric"),
    ({"mean_itl_ms": "<=20"}, "sla.mean_itl_ms: the replay keeps no per-token times"),
    ({"p0_ttft_ms": "<=20"}, "sla.p0_ttft_ms: a percentile must be in (0, 100]"),
    ({"good_fraction": "<=0.99"}, "sla.good_fraction: '<=0.99': good_fraction is a share bounded from below"),
    ([{"p99_e2el_ms": "<=5"}, {"p90_ttft_ms": "<=-1"}], "sla[1].p90_ttft_ms: '<=-1': the target must be"),
    ([], "sla: no constraint sets"),
    ({}, "sla: expected an object of constraints"),
])
def test_bad_constraints_are_refused_naming_their_key(data, message):
    with pytest.raises(SlaError, match=None) as error:
        parse(data)
    assert message in str(error.value)


def test_a_file_names_itself_in_errors(tmp_path):
    path = tmp_path / "sla.json"
    path.write_text(json.dumps([{"p99_e2el_ms": "<=500"}]))
    assert load(str(path))[0].text == "p99_e2el_ms<=500"
    path.write_text("{not json")
    with pytest.raises(SlaError, match="sla.json: cannot read constraints"):
        load(str(path))


def test_strict_and_inclusive_bounds_and_margins():
    inclusive, strict = Constraint("p99_e2el_ms", "<=", 500), Constraint("p99_e2el_ms", "<", 500)
    assert inclusive.holds(500) and not strict.holds(500)
    assert inclusive.margin(750) == pytest.approx(0.5) and inclusive.margin(math.inf) == math.inf
    assert Constraint("good_fraction", ">=", 0.99).margin(0.97) == pytest.approx(0.02)


def served(ttft, e2e, tokens=11):
    return RequestResult(0.0, "chat", "ok", "fast", 100, tokens, ttft, e2e)


def test_statistics_are_numpys_and_a_refused_request_is_infinitely_slow():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5  # numpy.percentile([1, 2, 3, 4], 50)
    assert percentile([1.0, 2.0, 3.0, 4.0], 90) == pytest.approx(3.7)
    results = [served(0.1, 1.1), served(0.2, 2.2), served(0.3, 3.3, tokens=1)]
    got = measure(["median_ttft_ms", "mean_tpot_ms", "p99_e2el_ms", "good_fraction"], results, 0.75)
    assert got["median_ttft_ms"] == pytest.approx(200)
    assert got["mean_tpot_ms"] == pytest.approx(100 * 1.5)  # the one-token answer has no TPOT (as vLLM)
    assert got["good_fraction"] == 0.75
    refused = [*results, RequestResult(0.0, "chat", "rejected", None, 100, 10)]
    got = measure(["p50_ttft_ms", "p99_ttft_ms", "mean_e2el_ms"], refused, 0.5)
    assert got["p50_ttft_ms"] == pytest.approx(250) and got["p99_ttft_ms"] == math.inf and got["mean_e2el_ms"] == math.inf
