"""What the endpoint picker's hop costs (issue #35), the "bench-overhead-envoy" section of
docs/deploy.md, rendered from ``docs/results/overhead-envoy.json``: one bench-overhead run of
Envoy alone over a static cluster, Envoy with a picker that only answers ext_proc, Envoy with
``duet epp``, and Duet as the proxy, beside the direct connection. Pure functions of the record.

Issue #35's goals, per mode: the picker path's added p50 at most the proxy's, and its req/s per
EPP core (req/s over the CPU the picker process used) at least the proxy's per core. Beside
them, the rate per core of Envoy and the picker together (they share the gateway core), which
is what a pair costs where Envoy is not there already."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from loadtests.benchmarks.overhead.measure.machine import describe_busy
from loadtests.benchmarks.overhead.measure.phases import Measurement
from loadtests.benchmarks.overhead.report.results import RunRecord
from loadtests.benchmarks.overhead.report.summary import DIRECT, Goal, added_p50_ms, find, goals_text

RESULTS = Path(__file__).resolve().parents[4] / "docs" / "results" / "overhead-envoy.json"
GATEWAYS = ("envoy", "envoy-null-picker", "envoy-null-picker-request-only", "envoy-duet-epp", "duet")
MODES = ("non-stream", "stream")
PICKER, PROXY = "envoy-duet-epp", "duet"


def per_core(m: Measurement | None) -> float | None:
    """Req/s per core of CPU the gateway used in the throughput phase (None: CPU not measured)."""
    if m is None or not m.gateway_cpu:
        return None
    return m.throughput.rps / m.gateway_cpu


def per_picker_core(m: Measurement | None) -> float | None:
    """Req/s per core of CPU the picker process alone used (None: no picker, or not measured)."""
    if m is None or not m.companion_cpu:
        return None
    return m.throughput.rps / m.companion_cpu


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return None if numerator is None or not denominator else numerator / denominator


def picker_goals(measurements: Sequence[Measurement]) -> list[Goal]:
    """Per mode: the picker path's added p50 minus the proxy's (goal <= 0 ms), its req/s per
    EPP core over the proxy's per core (goal >= 1), and the same for Envoy and the picker
    together (goal >= 1)."""
    found: list[Goal] = []
    for mode in MODES:
        picker, proxy = find(measurements, PICKER, mode), find(measurements, PROXY, mode)
        picker_added = None if picker is None else added_p50_ms(measurements, picker)
        proxy_added = None if proxy is None else added_p50_ms(measurements, proxy)
        gap = None if picker_added is None or proxy_added is None else picker_added - proxy_added
        found += [Goal(f"{PICKER} {mode}: added p50 minus the proxy's (ms)", gap, 0.0, True),
                  Goal(f"{PICKER} {mode}: req/s per EPP core / the proxy's per core",
                       _ratio(per_picker_core(picker), per_core(proxy)), 1.0, False),
                  Goal(f"{PICKER} {mode}: req/s per core of Envoy and the picker together / the proxy's",
                       _ratio(per_core(picker), per_core(proxy)), 1.0, False)]
    return found


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def table(measurements: Sequence[Measurement]) -> str:
    header = ["gateway", "mode", "req/s", "gateway CPU %", "req/s per core", "picker CPU %", "req/s per picker core",
              "p50 ms", "added p50 ms", "p99 ms", "errors"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for gateway in (DIRECT, *GATEWAYS):
        for mode in MODES:
            m = find(measurements, gateway, mode)
            if m is None:
                continue
            added = None if gateway == DIRECT else added_p50_ms(measurements, m)
            cpu = None if m.gateway_cpu is None else 100 * m.gateway_cpu
            picker_cpu = None if m.companion_cpu is None else 100 * m.companion_cpu
            name = "duet (proxy)" if gateway == PROXY else gateway
            lines.append(f"| {name} | {mode} | {m.throughput.rps:.0f} | {_number(cpu, 0)} | {_number(per_core(m), 0)} | "
                         f"{_number(picker_cpu, 0)} | {_number(per_picker_core(m), 0)} | "
                         f"{m.latency.p50_ms:.3f} | {_number(added, 3)} | {m.latency.p99_ms:.3f} | {m.errors} |")
    return "\n".join(lines)


def section(record: RunRecord) -> str:
    """Markdown for the section: command, machine, the table, issue #35's goals."""
    result, host = record.result, record.host
    busy = max(result.busy_before.values(), default=0.0)
    warning = (" **Other work kept the machine busy, so these req/s are low and noisy**: the per-core column and the "
               "comparison within the run are what to read." if busy >= 0.15 else "")
    skipped = "".join(f"\n\nNot measured: **{s.name}**: {s.reason}" for s in result.skipped if s.name in GATEWAYS)
    return f"""\
Measured {record.date} with `{record.command}` (`docs/results/overhead-envoy.json`; the harness and its
method are bench-overhead's, docs/benchmarks.md "Gateway overhead"). Machine: {host.cpus} cores
({host.cpu_model}; hardware class {host.hardware_class}), Linux {host.kernel}; other work just before
the run: {describe_busy(result.busy_before)} busy.{warning} Each gateway runs on core {record.gateway_core}, a picker
beside its Envoy on that core (the gateway CPU column counts both, the picker's its process alone);
`envoy-null-picker` answers ext_proc with one fixed endpoint and does nothing else (the transport's own cost);
`envoy-null-picker-request-only` is the same picker shown only the request (Envoy's response goes straight to the
client): what taking the response's round trip off the request's path would leave.

{table(result.measurements)}{skipped}

Issue #35's goals (the picker's added p50 at most the proxy's; its req/s per EPP core at least the proxy's
per core), and the rate per core of Envoy and the picker together against the proxy's:

{goals_text(picker_goals(result.measurements))}"""
