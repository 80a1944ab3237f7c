"""The machine's load from canned /proc text: other processes' CPU in cores with the probe's own
processes (and their children) left out, steal as a share, and no reading where /proc is not."""

from __future__ import annotations

import pytest

from serving.calibration.load import (
    CpuGauge,
    CpuReading,
    MachineLoad,
    Quiet,
    load_between,
    parse_proc_stat,
    process_ticks,
)

# user nice system idle iowait irq softirq steal guest guest_nice
PROC_STAT = """cpu  1000 10 200 5000 40 3 7 60 100 0
cpu0 500 5 100 2500 20 1 4 30 50 0
cpu1 500 5 100 2500 20 2 3 30 50 0
intr 1 2 3
"""


def pid_stat(pid: int, name: str, utime: int, stime: int) -> str:
    return f"{pid} ({name}) S 1 {pid} {pid} 0 -1 4194304 98 0 0 0 {utime} {stime} 0 0 20 0 1 0 624868 3133440 357"


def test_proc_stat_gives_all_time_busy_time_steal_and_the_cores() -> None:
    total, busy, steal, cores = parse_proc_stat(PROC_STAT)
    assert total == 1000 + 10 + 200 + 5000 + 40 + 3 + 7 + 60  # guest is inside user already
    assert busy == 1000 + 10 + 200 + 3 + 7
    assert (steal, cores) == (60, 2)


def test_a_proc_stat_without_the_all_cores_line_is_refused() -> None:
    with pytest.raises(ValueError, match="all-cores"):
        parse_proc_stat("intr 1 2 3\n")


def test_a_process_busy_time_is_its_user_and_system_ticks_whatever_its_name() -> None:
    assert process_ticks(pid_stat(42, "vllm (engine) 0", 700, 45)) == 745


def reading(total: int, busy: int, steal: int = 0, own: int = 0, cores: int = 2) -> CpuReading:
    return CpuReading(total, busy, steal, own, cores)


@pytest.mark.parametrize(("busy", "own", "steal", "others_cores", "steal_share"), [
    (0, 0, 0, 0.0, 0.0),          # idle
    (200, 0, 0, 2.0, 0.0),        # two busy loops on two cores (200 ticks of 200)
    (100, 100, 0, 0.0, 0.0),      # only the probe's own processes: nobody else
    (150, 100, 0, 0.5, 0.0),      # half a core of someone else's beside the probe
    (100, 0, 20, 1.0, 0.1),       # one core busy, a tenth of the time stolen
])
def test_others_cpu_is_the_machines_busy_time_less_the_probes_own_in_cores(
        busy: int, own: int, steal: int, others_cores: float, steal_share: float) -> None:
    load = load_between(reading(1000, 300, 5, 40), reading(1200, 300 + busy, 5 + steal, 40 + own))
    assert load is not None and load.cores == 2
    assert round(load.others_cores, 6) == others_cores and round(load.steal_share, 6) == steal_share


def test_no_tick_between_two_readings_is_no_load_rather_than_a_division_by_zero() -> None:
    assert load_between(reading(1000, 300), reading(1000, 300)) is None


def test_the_quiet_rule_allows_a_machine_within_both_limits_only() -> None:
    quiet = Quiet(max_others_cores=0.5, max_steal_share=0.1)
    assert quiet.allows(MachineLoad(0.5, 0.1, 2))
    assert not quiet.allows(MachineLoad(0.6, 0.0, 2))
    assert not quiet.allows(MachineLoad(0.0, 0.2, 2))


class FakeProc:
    """A /proc of canned files."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    def list_dir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/")[0] for p in self.files if p.startswith(prefix)}
        if not names:
            raise FileNotFoundError(path)
        return sorted(names)


def test_the_gauge_counts_the_probe_and_the_replica_with_every_child_of_any_thread_as_its_own() -> None:
    proc = FakeProc({
        "/proc/stat": PROC_STAT,
        "/proc/10/stat": pid_stat(10, "duet", 30, 5),            # the prober
        "/proc/10/task/10/children": "",
        "/proc/20/stat": pid_stat(20, "python", 100, 10),        # the replica's API server
        "/proc/20/task/20/children": "",
        "/proc/20/task/21/children": "22",                        # its engine, started by a thread
        "/proc/22/stat": pid_stat(22, "VLLM::EngineCore", 900, 90),
        "/proc/22/task/22/children": "",
        "/proc/30/stat": pid_stat(30, "busy loop", 5000, 0),      # someone else's
    })
    got = CpuGauge(lambda: (10, 20), proc.read_text, proc.list_dir).read()
    assert got is not None
    assert got.own == 35 + 110 + 990 and got.cores == 2


def test_a_process_gone_between_listing_and_reading_counts_nothing() -> None:
    proc = FakeProc({"/proc/stat": PROC_STAT})
    got = CpuGauge(lambda: (99,), proc.read_text, proc.list_dir).read()
    assert got is not None and got.own == 0


def test_without_proc_stat_the_load_is_unknown() -> None:
    proc = FakeProc({})
    assert CpuGauge(lambda: (1,), proc.read_text, proc.list_dir).read() is None
