"""The supervisor against real subprocesses: simulated replicas (``python -m serving.sim``, starts in
about a second) for ready / crash-restart / stop, and tiny Python commands for failures. Waits are
on conditions (the supervisor's own state), never on elapsed time."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from serving.errors import SupervisorError
from serving.ports import free_port
from serving.supervisor import Backoff, ReplicaLaunch, ReplicaState, ReplicaStatus, Supervisor
from serving.vllm_replica import group_alive, health_status

QUICK = Backoff(initial_s=0.05, factor=2.0, max_s=0.2)


def sim_launch(tmp_path: Path, name: str) -> ReplicaLaunch:
    port = free_port()
    argv = (sys.executable, "-m", "serving.sim", "--port", str(port), "--profile", "fast-test",
            "--served-model-name", name)
    return ReplicaLaunch(name, argv, dict(os.environ), f"http://127.0.0.1:{port}", tmp_path / f"{name}.log")


def command_launch(tmp_path: Path, name: str, code: str) -> ReplicaLaunch:
    return ReplicaLaunch(name, (sys.executable, "-c", code), dict(os.environ), f"http://127.0.0.1:{free_port()}",
                         tmp_path / f"{name}.log")


class Recorder:
    """Every status the supervisor reports, per replica, in order (the callback runs on its thread)."""

    def __init__(self) -> None:
        self.seen: list[ReplicaStatus] = []
        self._lock = threading.Lock()

    def __call__(self, status: ReplicaStatus) -> None:
        with self._lock:
            self.seen.append(status)

    def states(self, name: str) -> list[ReplicaState]:
        with self._lock:
            return [s.state for s in self.seen if s.name == name]


def all_in(state: ReplicaState):  # type: ignore[no-untyped-def]
    return lambda statuses: all(s.state is state for s in statuses.values())


def test_backoff_doubles_up_to_its_cap() -> None:
    backoff = Backoff(initial_s=1.0, factor=2.0, max_s=5.0)
    assert [backoff.delay_s(n) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_replicas_get_ready_and_stop_takes_their_whole_groups(tmp_path: Path) -> None:
    recorder = Recorder()
    launches = [sim_launch(tmp_path, "standard"), sim_launch(tmp_path, "fast")]
    supervisor = Supervisor(launches, recorder, start_timeout_s=60, backoff=QUICK)
    with supervisor:
        statuses = supervisor.wait_ready(timeout_s=60)
        assert all(health_status(launch.url) == 200 for launch in launches)
        pids = [s.pid for s in statuses.values()]
    assert all(pid is not None and not group_alive(pid) for pid in pids)
    assert all(health_status(launch.url) is None for launch in launches)
    for name in ("standard", "fast"):
        assert recorder.states(name) == [ReplicaState.STARTING, ReplicaState.READY, ReplicaState.STOPPED]
    assert "start 1 of standard" in (tmp_path / "standard.log").read_text()


def test_a_crashed_replica_is_restarted_and_gets_ready_again(tmp_path: Path) -> None:
    recorder = Recorder()
    launch = sim_launch(tmp_path, "fast")
    with Supervisor([launch], recorder, start_timeout_s=60, backoff=QUICK) as supervisor:
        first = supervisor.wait_ready(timeout_s=60)["fast"]
        assert first.pid is not None
        os.killpg(first.pid, signal.SIGKILL)
        restarted = supervisor.wait_until(
            lambda s: s["fast"].state is ReplicaState.READY and s["fast"].restarts == 1, timeout_s=60)
        assert restarted
        again = supervisor.statuses()["fast"]
        assert again.pid != first.pid
        assert health_status(launch.url) == 200
    assert recorder.states("fast")[:5] == [ReplicaState.STARTING, ReplicaState.READY, ReplicaState.RESTARTING,
                                           ReplicaState.STARTING, ReplicaState.READY]
    restarting = next(s for s in recorder.seen if s.state is ReplicaState.RESTARTING)
    assert "exited with -9" in restarting.detail
    assert (tmp_path / "fast.log").read_text().count("---- duet: start") == 2


def test_a_replica_that_keeps_dying_fails_with_its_log(tmp_path: Path) -> None:
    recorder = Recorder()
    launch = command_launch(tmp_path, "broken", "print('engine core failed: no such checkpoint'); raise SystemExit(3)")
    with Supervisor([launch], recorder, start_timeout_s=30, backoff=QUICK, max_failures=2) as supervisor:
        with pytest.raises(SupervisorError, match="no such checkpoint"):
            supervisor.wait_ready(timeout_s=60)
        assert supervisor.statuses()["broken"].state is ReplicaState.FAILED
    assert recorder.states("broken") == [
        ReplicaState.STARTING, ReplicaState.RESTARTING, ReplicaState.STARTING, ReplicaState.RESTARTING,
        ReplicaState.STARTING, ReplicaState.FAILED]


def test_a_replica_that_never_answers_is_killed_and_retried(tmp_path: Path) -> None:
    recorder = Recorder()
    launch = command_launch(tmp_path, "mute", "import time; time.sleep(600)")
    with Supervisor([launch], recorder, start_timeout_s=0.3, backoff=QUICK, max_failures=1,
                    stop_grace_s=5) as supervisor:
        with pytest.raises(SupervisorError, match="no healthy /health within"):
            supervisor.wait_ready(timeout_s=60)
        pids = {s.pid for s in recorder.seen if s.pid is not None}
    assert len(pids) == 2
    assert not any(group_alive(pid) for pid in pids)


def test_wait_ready_gives_up_naming_the_pending_replica(tmp_path: Path) -> None:
    launch = command_launch(tmp_path, "slow", "print('loading weights', flush=True); import time; time.sleep(600)")
    with Supervisor([launch], start_timeout_s=600, stop_grace_s=5) as supervisor:
        assert supervisor.wait_until(lambda s: "loading weights" in (tmp_path / "slow.log").read_text(), 30)
        with pytest.raises(SupervisorError, match=r"not ready after 0 s:\nslow \(starting\):"):
            supervisor.wait_ready(timeout_s=0.2)


def test_stop_is_idempotent(tmp_path: Path) -> None:
    supervisor = Supervisor([command_launch(tmp_path, "x", "import time; time.sleep(600)")], stop_grace_s=5)
    supervisor.start()
    supervisor.stop()
    supervisor.stop()
    assert all_in(ReplicaState.STOPPED)(supervisor.statuses())
