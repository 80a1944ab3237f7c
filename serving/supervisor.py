"""Local replicas as supervised subprocesses: started, watched, restarted with backoff, stopped.

Each replica is a command (``ReplicaLaunch``) run as the leader of its own process group with its
output appended to a log file. One watcher thread moves every replica through

    starting -> ready -> (exits) -> restarting -> starting -> ...
                      \\-> failed   (after ``max_failures`` starts in a row that never got ready)

and reports each change to ``on_change``. Every replica's process group dies with the process
that runs the supervisor (``serving.die_with_parent.kept``); the kernel signals when the *thread*
that started it exits, so the watcher, which starts the restarts, is the one that stops every
replica at the end, before it exits. A start counts as failed when the process exits or
``/health`` does not answer 200 within ``start_timeout_s``; the wait before the next start doubles
with each failure in a row (``Backoff``) and resets once the replica is ready. ``stop`` ends every
process group (SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import enum
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from serving.die_with_parent import kept
from serving.errors import SupervisorError
from serving.vllm_replica import health_status, log_tail, stop_group

WATCH_INTERVAL_S = 0.2


class ReplicaState(enum.Enum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class ReplicaLaunch:
    """How to start one replica: ``argv`` and ``env`` exactly, ``url`` where ``/health`` answers."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    url: str
    log_path: Path


@dataclass(frozen=True, slots=True)
class Backoff:
    """Seconds to wait before restart number ``failures`` (1, 2, ...): ``initial_s * factor**(n-1)``,
    at most ``max_s``."""

    initial_s: float = 1.0
    factor: float = 2.0
    max_s: float = 30.0

    def delay_s(self, failures: int) -> float:
        return float(min(self.max_s, self.initial_s * self.factor ** max(0, failures - 1)))


@dataclass(frozen=True, slots=True)
class ReplicaStatus:
    """What the supervisor reports: the state, since when (monotonic seconds), the process, how
    many times it was restarted, and for restarting/failed why (the log's last lines)."""

    name: str
    url: str
    state: ReplicaState
    since: float
    started_at: float
    pid: int | None = None
    restarts: int = 0
    detail: str = ""

    @property
    def ready_after_s(self) -> float:
        """For a ready replica: seconds its last start took."""
        return self.since - self.started_at


StatusCallback = Callable[[ReplicaStatus], None]


@dataclass(slots=True)
class _Supervised:
    """One replica's mutable bookkeeping; touched only under the supervisor's lock."""

    launch: ReplicaLaunch
    status: ReplicaStatus
    process: subprocess.Popen[bytes] | None = None
    failures_in_a_row: int = 0
    next_start_at: float = 0.0


class Supervisor:
    """Runs ``launches`` until ``stop``; usable as a context manager (stop on exit)."""

    def __init__(self, launches: Iterable[ReplicaLaunch], on_change: StatusCallback = lambda status: None, *,
                 start_timeout_s: float = 300.0, backoff: Backoff = Backoff(), max_failures: int = 5,
                 stop_grace_s: float = 20.0) -> None:
        now = time.monotonic()
        self._replicas = {
            launch.name: _Supervised(launch, ReplicaStatus(launch.name, launch.url, ReplicaState.STARTING, now, now))
            for launch in launches
        }
        self._on_change = on_change
        self._start_timeout_s = start_timeout_s
        self._backoff = backoff
        self._max_failures = max_failures
        self._stop_grace_s = stop_grace_s
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="replica-supervisor", daemon=True)

    def __enter__(self) -> Supervisor:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Start every replica and the watcher thread."""
        for replica in self._replicas.values():
            self._spawn(replica, restarts=0)
        self._watcher.start()

    def statuses(self) -> dict[str, ReplicaStatus]:
        with self._lock:
            return {name: replica.status for name, replica in self._replicas.items()}

    def wait_until(self, predicate: Callable[[dict[str, ReplicaStatus]], bool], timeout_s: float) -> bool:
        """Block until ``predicate(statuses)`` holds (True) or ``timeout_s`` passes (False)."""
        with self._lock:
            return self._lock.wait_for(lambda: predicate(self._current()), timeout_s)

    def wait_ready(self, timeout_s: float) -> dict[str, ReplicaStatus]:
        """Block until every replica is ready. Raise ``SupervisorError`` when one fails for good or
        the time runs out (naming the replicas and their log's last lines)."""
        def settled(statuses: dict[str, ReplicaStatus]) -> bool:
            states = {s.state for s in statuses.values()}
            return states == {ReplicaState.READY} or ReplicaState.FAILED in states

        self.wait_until(settled, timeout_s)
        statuses = self.statuses()
        failed = [s for s in statuses.values() if s.state is ReplicaState.FAILED]
        if failed:
            raise SupervisorError("\n".join(f"replica {s.name} failed: {s.detail}" for s in failed))
        pending = [s for s in statuses.values() if s.state is not ReplicaState.READY]
        if pending:
            tails = "\n".join(f"{s.name} ({s.state.value}):\n{log_tail(self._replicas[s.name].launch.log_path, 10)}"
                              for s in pending)
            raise SupervisorError(f"replicas not ready after {timeout_s:.0f} s:\n{tails}")
        return statuses

    def stop(self) -> None:
        """Stop watching, then end every replica's process group. Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._watcher.is_alive():
            self._watcher.join()  # it ends the replicas before it exits (``_watch``)
        else:
            self._end_all()

    def _end_all(self) -> None:
        """End every replica's process group (SIGTERM, then SIGKILL after the grace period)."""
        with self._lock:
            processes = [(r, r.process) for r in self._replicas.values() if r.process is not None]
        threads = [threading.Thread(target=stop_group, args=(p, self._stop_grace_s)) for _, p in processes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for replica, _ in processes:
            if replica.status.state is not ReplicaState.FAILED:  # failed stays failed: it says why
                self._set(replica, ReplicaState.STOPPED)

    def _current(self) -> dict[str, ReplicaStatus]:
        return {name: replica.status for name, replica in self._replicas.items()}

    def _watch(self) -> None:
        try:
            while not self._stopping.wait(WATCH_INTERVAL_S):
                for replica in self._replicas.values():
                    if self._stopping.is_set():
                        return
                    self._step(replica)
        finally:
            # A replica this thread restarted dies when it exits (PR_SET_PDEATHSIG): stop them all
            # gracefully first, from here.
            self._end_all()

    def _step(self, replica: _Supervised) -> None:
        """Advance one replica's state machine by what its process and ``/health`` say now."""
        state, now = replica.status.state, time.monotonic()
        if state is ReplicaState.RESTARTING and now >= replica.next_start_at:
            self._spawn(replica, restarts=replica.status.restarts + 1)
        elif state in (ReplicaState.STARTING, ReplicaState.READY):
            assert replica.process is not None
            code = replica.process.poll()
            if code is not None:
                self._failed(replica, f"exited with {code}")
            elif state is ReplicaState.STARTING:
                if health_status(replica.launch.url, timeout_s=1.0) == 200:
                    replica.failures_in_a_row = 0
                    self._set(replica, ReplicaState.READY)
                elif now - replica.status.started_at > self._start_timeout_s:
                    stop_group(replica.process, self._stop_grace_s)
                    self._failed(replica, f"no healthy /health within {self._start_timeout_s:.0f} s")

    def _failed(self, replica: _Supervised, why: str) -> None:
        replica.failures_in_a_row += 1
        detail = f"{why}\n{log_tail(replica.launch.log_path, 10)}"
        if replica.failures_in_a_row > self._max_failures:
            self._set(replica, ReplicaState.FAILED, detail=detail)
            return
        replica.next_start_at = time.monotonic() + self._backoff.delay_s(replica.failures_in_a_row)
        self._set(replica, ReplicaState.RESTARTING, detail=detail)

    def _spawn(self, replica: _Supervised, restarts: int) -> None:
        launch = replica.launch
        launch.log_path.parent.mkdir(parents=True, exist_ok=True)
        with launch.log_path.open("ab") as log:
            log.write(f"---- duet: start {restarts + 1} of {launch.name}: {' '.join(launch.argv)}\n".encode())
            log.flush()
            replica.process = subprocess.Popen(  # under a keeper: the group dies with us, should we be killed
                kept(launch.argv), env=dict(launch.env), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop_group ends the whole tree
            )
        now = time.monotonic()
        self._set(replica, ReplicaState.STARTING, pid=replica.process.pid, restarts=restarts, started_at=now)

    def _set(self, replica: _Supervised, state: ReplicaState, **changes: object) -> None:
        with self._lock:
            changes.setdefault("detail", "")
            replica.status = replace(replica.status, state=state, since=time.monotonic(), **changes)  # type: ignore[arg-type]
            status = replica.status
            self._lock.notify_all()
        self._on_change(status)
