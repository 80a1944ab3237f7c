import pytest

from loadtests.scoring.slo import RequestRecord, Slo, attainment, max_rate_with_attainment, meets, parse_slos, percentile


def record(ttft=0.1, latency=1.1, output=11, ok=True, task="chat", **kw):
    return RequestRecord(task=task, variant="fast", started_s=0.0, ok=ok, ttft_s=ttft, latency_s=latency,
                         input_tokens=100, output_tokens=output, **kw)


def test_tpot_is_latency_after_first_token_over_the_other_tokens():
    assert record(ttft=0.1, latency=1.1, output=11).tpot_s == pytest.approx(0.1)
    assert record(output=1).tpot_s is None
    assert record(ok=False).tpot_s is None


@pytest.mark.parametrize(
    ("rec", "slo", "expected"),
    [
        (record(ttft=0.1, latency=1.1, output=11), Slo(ttft_ms=200, tpot_ms=150), True),
        (record(ttft=0.3, latency=1.1, output=11), Slo(ttft_ms=200, tpot_ms=150), False),  # TTFT missed
        (record(ttft=0.1, latency=2.1, output=11), Slo(ttft_ms=200, tpot_ms=150), False),  # TPOT 200 ms missed
        (record(ttft=0.1, latency=5.0, output=1), Slo(ttft_ms=200, tpot_ms=150), True),  # one token: no TPOT to miss
        (record(ok=False), Slo(ttft_ms=1e9, tpot_ms=1e9), False),
    ],
)
def test_meets_needs_both_targets(rec, slo, expected):
    assert meets(rec, slo) is expected


def test_attainment_and_goodput():
    records = [record(), record(ttft=5.0), record(ok=False, ttft=None), record(task="other")]
    result = attainment(records, {"chat": Slo(ttft_ms=200, tpot_ms=150)}, duration_s=2.0)
    assert (result.requests, result.met, result.failed) == (4, 2, 1)
    assert result.share == 0.5
    assert result.goodput_rps == 1.0
    assert result.throughput_rps == 2.0


def test_in_model_time_multiplies_every_duration():
    scaled = record(ttft=0.1, latency=1.1, output=11, itl_s=(0.1, 0.2), lag_s=0.5).in_model_time(3.0)
    assert (scaled.ttft_s, scaled.latency_s, *scaled.itl_s, scaled.lag_s) == pytest.approx((0.3, 3.3, 0.3, 0.6, 1.5))
    assert scaled.tpot_s == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ([(1, 0.99), (2, 0.95), (3, 0.5)], 2 + (0.95 - 0.9) / (0.95 - 0.5)),
        ([(1, 0.99), (2, 0.95)], 2),
        ([(2, 0.95), (1, 0.99), (3, 0.91)], 3),
        ([(1, 0.5), (2, 0.95)], None),  # the lowest rate already misses
        ([(1, 0.9), (2, 0.0)], 1),
    ],
)
def test_max_rate_with_attainment_is_distserve_goodput(points, expected):
    result = max_rate_with_attainment(points)
    assert result == (pytest.approx(expected) if expected is not None else None)


def test_percentile_interpolates_like_numpy():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 99) == 5
    assert percentile([], 50) is None


def test_parse_slos_overrides_and_rejects_malformed():
    slos = parse_slos("chat=100/10, coding=50/5")
    assert slos["chat"] == Slo(ttft_ms=100, tpot_ms=10) and slos["coding"] == Slo(ttft_ms=50, tpot_ms=5)
    assert "extraction" in slos
    with pytest.raises(ValueError, match="TASK=TTFT_MS/TPOT_MS"):
        parse_slos("chat=100")
