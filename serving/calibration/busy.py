"""A probe with the machine's load around it (``serving.calibration.load``): made again while
other processes were busy, at most ``Quiet.max_probes`` times, keeping the quietest, and saying
how busy that one was so the operator can tell a measured speed from someone else's load.

Each probe's load is the worse of two readings: the machine over ``Quiet.settle_s`` just before
(the replica idle: anything busy is someone else), and the machine during the probe less the
probe's own processes. The second is read only when the replica's processes are known or it runs
elsewhere; a local replica of unknown processes would count its own work as someone else's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from serving.calibration.fit import ProbeSamples
from serving.calibration.load import CpuReading, MachineLoad, Quiet, load_between


@dataclass(frozen=True, slots=True)
class LoadedProbe:
    """The probe kept, its machine load (None: unknown, no ``/proc``), how many probes were
    made, and whether the kept one was quiet by ``Quiet``'s rule (an unknown load counts as quiet:
    nothing says otherwise)."""

    samples: ProbeSamples
    load: MachineLoad | None
    probes: int
    quiet: bool


Reader = Callable[[], CpuReading | None]


async def probe_when_quiet(prober: Callable[[], Awaitable[ProbeSamples]], read: Reader, quiet: Quiet, *,
                           read_during: bool, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> LoadedProbe:
    """Run ``prober`` until a probe is quiet or ``quiet.max_probes`` were made; the quietest kept.
    ``read`` reads the machine's counters (``CpuGauge.read``; None where they cannot be read)."""

    async def once() -> tuple[ProbeSamples, MachineLoad | None]:
        settled = await _settled_load(read, quiet.settle_s, sleep)
        start = read()
        samples = await prober()
        end = read()
        during = load_between(start, end) if read_during and start is not None and end is not None else None
        return samples, _worse(settled, during)

    samples, load = await once()
    made = 1
    while load is not None and not quiet.allows(load) and made < quiet.max_probes:
        again, again_load = await once()
        made += 1
        if again_load is not None and _quieter(again_load, load):
            samples, load = again, again_load
    return LoadedProbe(samples, load, made, load is None or quiet.allows(load))


async def _settled_load(read: Reader, settle_s: float, sleep: Callable[[float], Awaitable[None]]) -> MachineLoad | None:
    before = read()
    await sleep(settle_s)
    after = read()
    return load_between(before, after) if before is not None and after is not None else None


def _worse(a: MachineLoad | None, b: MachineLoad | None) -> MachineLoad | None:
    if a is None or b is None:
        return a or b
    return a.busier(b)


def _quieter(a: MachineLoad, b: MachineLoad) -> bool:
    return a.others_cores + a.steal_share * a.cores < b.others_cores + b.steal_share * b.cores
