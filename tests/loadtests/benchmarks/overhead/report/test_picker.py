"""The picker hop's section: issue #35's goals against the proxy, per core of CPU used."""

from __future__ import annotations

import dataclasses

import pytest

from loadtests.benchmarks.overhead.measure.phases import Measurement, PhasePlan
from loadtests.benchmarks.overhead.measure.run import RunResult
from loadtests.benchmarks.overhead.report.picker import per_core, per_picker_core, picker_goals, section
from loadtests.benchmarks.overhead.report.results import Host, RunRecord
from tests.loadtests.benchmarks.overhead.report.measurements import m, wrk


def at_cpu(measurement: Measurement, cpu: float | None, picker_cpu: float | None = None) -> Measurement:
    return dataclasses.replace(measurement, gateway_cpu=cpu, companion_cpu=picker_cpu)


def test_req_s_per_core_divides_by_the_cpu_the_gateway_used() -> None:
    assert per_core(at_cpu(m("duet", "stream", 500, 900), 0.5)) == pytest.approx(1800)
    assert per_core(at_cpu(m("duet", "stream", 500, 900), None)) is None
    assert per_core(None) is None


def test_req_s_per_picker_core_divides_by_the_cpu_the_picker_alone_used() -> None:
    assert per_picker_core(at_cpu(m("envoy-duet-epp", "stream", 500, 900), 0.9, 0.6)) == pytest.approx(1500)
    assert per_picker_core(at_cpu(m("duet", "stream", 500, 900), 0.5)) is None  # no picker


@pytest.mark.parametrize("picker_p50_us, picker_rps, cpu, picker_cpu, verdicts", [
    (500, 1000, 1.0, 0.5, [True, True, True]),     # as fast as the proxy, as many req/s on the same CPU
    (2200, 480, 1.0, 0.7, [False, False, False]),  # 1.7 ms more, half the rate per core
    (900, 500, 0.4, 0.3, [False, True, True]),     # slower, but it used 40% of its core for 500 req/s
    (900, 800, 1.0, 0.6, [False, True, False]),    # the picker alone beats the proxy, with Envoy it does not
])
def test_the_goals_compare_the_picker_with_the_proxy(picker_p50_us, picker_rps, cpu, picker_cpu, verdicts) -> None:
    runs = [m("direct", mode, 100, 9000) for mode in ("non-stream", "stream")]
    runs += [at_cpu(m("duet", mode, 500, 1000), 1.0) for mode in ("non-stream", "stream")]
    runs += [at_cpu(m("envoy-duet-epp", "non-stream", picker_p50_us, picker_rps), cpu, picker_cpu)]
    found = {g.name: g.met for g in picker_goals(runs)}
    assert [found["envoy-duet-epp non-stream: added p50 minus the proxy's (ms)"],
            found["envoy-duet-epp non-stream: req/s per EPP core / the proxy's per core"],
            found["envoy-duet-epp non-stream: req/s per core of Envoy and the picker together / the proxy's"]] == verdicts
    assert found["envoy-duet-epp stream: added p50 minus the proxy's (ms)"] is None  # not measured


def test_the_section_quotes_the_machine_and_warns_when_it_was_busy() -> None:
    runs = tuple(m(g, mode, 500, 1000) for g in ("direct", "envoy", "envoy-duet-epp", "duet")
                 for mode in ("non-stream", "stream"))
    host = Host(2, "Some CPU", "6.1.0", "avx512")
    quiet = RunResult(runs, (), {"non-stream": wrk(100, 5000)}, {"nginx": "1.22.1"}, {"cpu0": 0.01, "cpu1": 0.02})
    text = section(RunRecord(quiet, "make bench-overhead-envoy", PhasePlan(), 1, "2026-12-06 10:00 UTC", host))
    assert "hardware class avx512" in text and "| duet (proxy) | stream | 1000 | 90 | 1111 | — | — |" in text
    assert "busy, so" not in text
    busy = dataclasses.replace(quiet, busy_before={"cpu0": 0.9, "cpu1": 0.8})
    assert "busy, so" in section(RunRecord(busy, "x", PhasePlan(), 1, "2026-12-06 10:00 UTC", host))
