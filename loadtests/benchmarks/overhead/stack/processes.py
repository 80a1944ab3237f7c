"""Processes the harness starts: pinned to a core, logged to a file, waited on, stopped.

Each process gets its own session, so stopping it signals exactly the group the harness
created (a LiteLLM proxy's uvicorn workers, nginx's worker) and nothing else on the machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ProcessFailed(RuntimeError):
    """A started process exited, or never became ready; the message ends with its log's tail."""


@dataclass(frozen=True, slots=True)
class PinnedProcess:
    """A started process: its name, its ``Popen``, and the file its output goes to."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the process's combined stdout/stderr."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

    def check_alive(self) -> None:
        """Raise ``ProcessFailed`` if the process has exited."""
        code = self.popen.poll()
        if code is not None:
            raise ProcessFailed(f"{self.name} exited with {code}:\n{self.log_tail()}")

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL it if still there after ``grace_s``."""
        if self.popen.poll() is None:
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.popen.wait(grace_s)


def start_pinned(
    name: str, command: Sequence[str], core: int, log_path: Path, env: Mapping[str, str] | None = None
) -> PinnedProcess:
    """Start ``command`` under ``taskset -c core`` in a new session, output to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        popen = subprocess.Popen(
            ["taskset", "-c", str(core), *command],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})}, start_new_session=True,
        )
    return PinnedProcess(name, popen, log_path)


def wait_until(process: PinnedProcess, ready: Callable[[], bool], timeout_s: float, poll_s: float = 0.2) -> None:
    """Poll ``ready()`` until it is true; fail early if the process dies, or at ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        process.check_alive()
        if ready():
            return
        time.sleep(poll_s)
    raise ProcessFailed(f"{process.name} not ready after {timeout_s:.0f} s:\n{process.log_tail()}")


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue  # the thread ended while we looked
    return kids


def _own_cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0  # the process ended while we looked
    # fields[0] is the state (3rd field of stat); utime and stime are the 14th and 15th.
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by ``pid`` and its living descendants."""
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        total += _own_cpu_s(current)
        pending += _children(current)
    return total
