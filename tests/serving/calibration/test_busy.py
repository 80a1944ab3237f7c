"""Probing on a busy machine, with scripted counters instead of /proc and no real sleep: a quiet
probe is made once; a busy one again, at most as often as the rule says, the quietest kept; the
load during a probe is read only when the replica's own work can be left out of it."""

from __future__ import annotations

import asyncio

from serving.calibration.busy import LoadedProbe, probe_when_quiet
from serving.calibration.fit import ProbeSamples
from serving.calibration.load import CpuReading, Quiet

QUIET = Quiet(max_others_cores=0.5, max_steal_share=0.1, max_probes=3, settle_s=1.0)


class Script:
    """A prober and its machine: per probe, (others' cores over the settle window, over the
    probe), as the four readings a probe takes (settle start and end, probe start and end) on two
    cores, 200 ticks a window."""

    def __init__(self, *windows: tuple[float, float]) -> None:
        readings: list[CpuReading] = []
        total = busy = 0
        for settle, during in windows:
            total += 200  # time passes between probes, busy or not: not counted
            readings.append(CpuReading(total, busy, 0, 0, 2))  # settle start
            total, busy = total + 200, busy + round(settle * 100)
            readings += [CpuReading(total, busy, 0, 0, 2)] * 2  # settle end, probe start
            total, busy = total + 200, busy + round(during * 100)
            readings.append(CpuReading(total, busy, 0, 0, 2))  # probe end
        self.readings = iter(readings)
        self.probes = 0
        self.slept: list[float] = []

    def read(self) -> CpuReading | None:
        return next(self.readings)

    async def probe(self) -> ProbeSamples:
        self.probes += 1
        return ProbeSamples(f"probe-{self.probes}", (), (), 1.0)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    def run(self, *, read_during: bool = True) -> LoadedProbe:
        return asyncio.run(probe_when_quiet(self.probe, self.read, QUIET, read_during=read_during, sleep=self.sleep))


def test_a_quiet_machine_is_probed_once_after_reading_it_alone() -> None:
    script = Script((0.1, 0.2))
    got = script.run()
    assert (got.samples.model, got.probes, got.quiet, script.slept) == ("probe-1", 1, True, [1.0])
    assert got.load is not None and round(got.load.others_cores, 2) == 0.2


def test_a_busy_probe_is_made_again_and_the_quiet_one_kept() -> None:
    got = Script((1.9, 2.0), (0.0, 0.1)).run()
    assert (got.samples.model, got.probes, got.quiet) == ("probe-2", 2, True)


def test_busy_before_the_probe_counts_even_when_the_probe_itself_was_quiet() -> None:
    got = Script((1.5, 0.0), (0.0, 0.0)).run()
    assert (got.samples.model, got.probes) == ("probe-2", 2)


def test_a_machine_busy_throughout_is_probed_at_most_as_often_as_the_rule_says_and_the_quietest_kept() -> None:
    script = Script((2.0, 2.0), (0.0, 1.2), (1.8, 1.8), (0.0, 0.0))
    got = script.run()
    assert (script.probes, got.probes, got.samples.model, got.quiet) == (3, 3, "probe-2", False)
    assert got.load is not None and round(got.load.others_cores, 2) == 1.2


def test_without_the_replicas_processes_only_the_machine_alone_is_read() -> None:
    # A local replica's own work would read as someone else's during the probe.
    got = Script((0.1, 2.0)).run(read_during=False)
    assert (got.probes, got.quiet) == (1, True)
    assert got.load is not None and round(got.load.others_cores, 2) == 0.1


def test_where_the_load_cannot_be_read_the_probe_is_made_once_and_says_so() -> None:
    async def probe() -> ProbeSamples:
        return ProbeSamples("only", (), (), 1.0)

    async def sleep(seconds: float) -> None:
        pass

    got = asyncio.run(probe_when_quiet(probe, lambda: None, QUIET, read_during=True, sleep=sleep))
    assert (got.samples.model, got.probes, got.load, got.quiet) == ("only", 1, None, True)
