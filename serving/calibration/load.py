"""How busy the machine was while a probe measured: the CPU other processes used, and steal.

A probe times a replica; on a machine where something else runs, it times the replica's share
of the CPU instead, and the gateway would route on that. So each probe is bracketed by readings
of Linux's counters:

- ``/proc/stat``'s first line: every core's time, busy (user, nice, system, irq, softirq) and
  steal (time the hypervisor ran another guest on our cores), in clock ticks;
- ``/proc/PID/stat`` (utime + stime) of the probe's own processes: the prober itself and, when
  known, the probed replica with its children (vLLM's engine runs in a child).

Between two readings, the others' CPU is the machine's busy time less our processes', in cores
(``0.0`` .. the machine's cores: 2.0 is two busy loops); steal is a share of all cores' time.
Parsing is pure (tests feed it text); ``CpuGauge`` reads the files through an injectable reader.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# /proc/stat's cpu line: user nice system idle iowait irq softirq steal guest guest_nice (guest
# time is already inside user and nice).
_BUSY_FIELDS = (0, 1, 2, 5, 6)
_STEAL_FIELD = 7


@dataclass(frozen=True, slots=True)
class CpuReading:
    """One look at the machine's counters, in clock ticks summed over its cores: all time
    (idle included), busy time, steal, and the busy time of the probe's own processes."""

    total: int
    busy: int
    steal: int
    own: int
    cores: int


@dataclass(frozen=True, slots=True)
class MachineLoad:
    """What else ran between two readings: ``others_cores``, the CPU processes other than the
    probe's used, in cores (0 .. ``cores``); ``steal_share``, the share of all cores' time stolen
    by the hypervisor (0 .. 1)."""

    others_cores: float
    steal_share: float
    cores: int

    def busier(self, other: MachineLoad) -> MachineLoad:
        """The worse of the two, term by term (a probe's load: before it, and during it)."""
        return MachineLoad(max(self.others_cores, other.others_cores),
                           max(self.steal_share, other.steal_share), max(self.cores, other.cores))


@dataclass(frozen=True, slots=True)
class Quiet:
    """When a machine is too busy to calibrate on: others use more than ``max_others_cores``
    cores, or more than ``max_steal_share`` of the time is stolen. A busy probe is made again,
    at most ``max_probes`` in all; each is preceded by ``settle_s`` of reading the machine alone
    (the replica idle)."""

    max_others_cores: float = 0.5
    max_steal_share: float = 0.1
    max_probes: int = 2
    settle_s: float = 1.0

    def allows(self, load: MachineLoad) -> bool:
        return load.others_cores <= self.max_others_cores and load.steal_share <= self.max_steal_share


def load_between(before: CpuReading, after: CpuReading) -> MachineLoad | None:
    """The machine's load from ``before`` to ``after``; None when no tick passed between them."""
    elapsed = after.total - before.total
    if elapsed <= 0:
        return None
    cores = max(1, after.cores)
    others = max(0, (after.busy - before.busy) - (after.own - before.own))
    steal = max(0, after.steal - before.steal)
    # elapsed counts every core's ticks: one core's worth of ticks is elapsed / cores.
    return MachineLoad(min(float(cores), others * cores / elapsed), min(1.0, steal / elapsed), cores)


def parse_proc_stat(text: str) -> tuple[int, int, int, int]:
    """(total, busy, steal, cores) from ``/proc/stat``'s text. Raises ValueError when its
    first line is not the all-cores ``cpu`` line."""
    lines = text.splitlines()
    head = lines[0].split() if lines else []
    if not head or head[0] != "cpu":
        raise ValueError("/proc/stat does not open with the all-cores cpu line")
    ticks = [int(v) for v in head[1:]]
    ticks += [0] * (10 - len(ticks))
    cores = sum(1 for line in lines[1:] if line.startswith("cpu") and line[3:4].isdigit())
    total = sum(ticks[:8])  # guest and guest_nice are inside user and nice already
    return total, sum(ticks[i] for i in _BUSY_FIELDS), ticks[_STEAL_FIELD], max(1, cores)


def process_ticks(text: str) -> int:
    """utime + stime from a ``/proc/PID/stat`` text (the name, in parentheses, may hold spaces)."""
    fields = text[text.rindex(")") + 2:].split()
    # After the name: state is field 3; utime and stime are fields 14 and 15.
    return int(fields[11]) + int(fields[12])


def _read_text(path: str) -> str:
    with open(path, encoding="ascii") as f:
        return f.read()


class CpuGauge:
    """Reads ``CpuReading``s of this machine. ``own_pids`` says which processes are the probe's
    (their children count too); ``read_text`` reads a file (tests pass canned ``/proc`` text).
    ``list_dir`` lists a folder (a process's threads, any of which may have started a child).
    ``read`` answers None where there is no ``/proc/stat`` (not Linux): the load is then unknown."""

    def __init__(self, own_pids: Callable[[], Iterable[int]] = lambda: (os.getpid(),),
                 read_text: Callable[[str], str] = _read_text,
                 list_dir: Callable[[str], Iterable[str]] = os.listdir) -> None:
        self._own_pids = own_pids
        self._read_text = read_text
        self._list_dir = list_dir

    def read(self) -> CpuReading | None:
        try:
            total, busy, steal, cores = parse_proc_stat(self._read_text("/proc/stat"))
        except (OSError, ValueError):
            return None
        return CpuReading(total, busy, steal, sum(self._ticks(pid) for pid in self._tree(self._own_pids())), cores)

    def _tree(self, roots: Iterable[int]) -> set[int]:
        seen: set[int] = set()
        todo = list(roots)
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            todo += self._children(pid)
        return seen

    def _children(self, pid: int) -> list[int]:
        children: list[int] = []
        try:
            for task in self._list_dir(f"/proc/{pid}/task"):
                children += [int(c) for c in self._read_text(f"/proc/{pid}/task/{task}/children").split()]
        except (OSError, ValueError):
            pass  # gone, or a kernel without the children files: the children found so far
        return children

    def _ticks(self, pid: int) -> int:
        try:
            return process_ticks(self._read_text(f"/proc/{pid}/stat"))
        except (OSError, ValueError, IndexError):
            return 0  # gone: a child that exits mid-probe makes the others' CPU read high, not low
