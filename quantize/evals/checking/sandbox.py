"""Running generated code against unit tests in a sandboxed subprocess.

Layers, each of which alone stops the usual accidents of generated code:
- a throwaway working directory (removed afterwards) holding only the code and its tests;
- ``unshare --net``: a network namespace with nothing but a down loopback (when the kernel lets
  us: as root, else through a user namespace; detected once per ``Sandbox``);
- as root, the child drops to ``nobody`` (``setpriv``), so the kernel, not only the hook below,
  refuses writes outside the directory;
- resource limits set by the child before the code runs: address space (a memory bomb gets
  MemoryError), CPU seconds, file size, open files, no new processes;
- a ``sys.addaudithook`` hook: no sockets, no processes, no ctypes, no file writes, renames or
  deletions outside the directory;
- ``python -I -S -B``: environment ignored (and cleared), no site-packages, no bytecode written;
- the parent's wall-clock limit kills the whole process group.

This contains mistakes and naive escapes of model-written code. It is not a jail for code written
to attack it (in-process introspection can defeat an audit hook); use gVisor or nsjail for that.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RUNNER = (Path(__file__).with_name("sandbox_runner.py")).read_text()
NOBODY = 65534


@dataclass(frozen=True, slots=True)
class Limits:
    wall_s: float = 10.0
    cpu_s: int = 5
    memory_bytes: int = 256 * 1024 * 1024
    file_bytes: int = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """``status``: passed (every test), failed (some test), error (the code raised before the
    tests), timeout (wall or CPU limit), memory (MemoryError), crashed (no result: the process
    exited or was killed by something else)."""

    status: str
    passed: int
    total: int
    detail: str

    @property
    def ok(self) -> bool:
        return self.status == "passed"


class Sandbox:
    """Runs code in a child process under the layers listed above; ``prefix`` is the isolation
    command line found on this machine (empty: resource limits and the audit hook only);
    ``scratch`` is where each run's two directories are made (default: the system temp directory;
    with privileges dropped it must be traversable by nobody)."""

    def __init__(self, limits: Limits = Limits(), prefix: tuple[str, ...] | None = None,
                 scratch: Path | None = None) -> None:
        self.limits = limits
        self.prefix = detect_isolation() if prefix is None else prefix
        self.scratch = scratch

    @property
    def drops_privileges(self) -> bool:
        return "setpriv" in self.prefix

    def run(self, code: str, tests: list[str]) -> SandboxResult:
        """Execute ``code``, then each test (a Python statement, e.g. an ``assert``)."""
        home = Path(tempfile.mkdtemp(prefix="duet-sandbox-", dir=self.scratch))
        logs = Path(tempfile.mkdtemp(prefix="duet-sandbox-out-", dir=self.scratch))
        try:
            (home / "solution.py").write_text(code)
            (home / "tests.json").write_text(json.dumps(tests))
            if self.drops_privileges:
                for path in (home, home / "solution.py", home / "tests.json"):
                    os.chown(path, NOBODY, NOBODY)
            return self._execute(home, logs, len(tests))
        finally:
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(logs, ignore_errors=True)

    def _execute(self, home: Path, logs: Path, total: int) -> SandboxResult:
        nonce = secrets.token_hex(16)
        limits = {"memory_bytes": self.limits.memory_bytes, "cpu_s": self.limits.cpu_s,
                  "file_bytes": self.limits.file_bytes}
        argv = [*self.prefix, sys.executable, "-I", "-S", "-B", "-c", RUNNER]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8"}
        # Output goes to files, not pipes: a flood is capped by the child's file-size limit
        # instead of filling the parent's memory.
        with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
            process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err, cwd=home, env=env,
                                       start_new_session=True, close_fds=True)
            try:
                process.communicate(json.dumps({"nonce": nonce, "limits": limits}).encode() + b"\n",
                                    timeout=self.limits.wall_s)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                return SandboxResult("timeout", 0, total, f"wall-clock limit {self.limits.wall_s} s")
        return _read_result(process.returncode, logs, nonce, total)


def _read_result(returncode: int, logs: Path, nonce: str, total: int) -> SandboxResult:
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return SandboxResult("timeout", 0, total, f"killed by signal {-returncode} (CPU limit)")
    for line in reversed(_tail(logs / "stdout").splitlines()):
        if line.startswith(nonce + " "):
            outcome = json.loads(line[len(nonce) + 1:])
            return _from_outcome(outcome, total)
    stderr = _tail(logs / "stderr")[-300:]
    return SandboxResult("crashed", 0, total, f"exit {returncode}, no result; {stderr}".strip())


def _from_outcome(outcome: dict[str, object], total: int) -> SandboxResult:
    passed = int(outcome.get("passed", 0))  # type: ignore[call-overload]
    error = str(outcome.get("error") or "")
    if passed == total and not error:
        return SandboxResult("passed", passed, total, "")
    if error.startswith("MemoryError"):
        status = "memory"
    elif passed == 0 and error and not error.startswith("AssertionError"):
        status = "error"
    else:
        status = "failed"
    return SandboxResult(status, passed, total, error)


def _tail(path: Path, limit: int = 64 * 1024) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - limit))
        return f.read().decode(errors="replace")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the child leads its own session and group
    except ProcessLookupError:
        pass  # it ended between the timeout and the kill
    process.wait()


def detect_isolation() -> tuple[str, ...]:
    """The strongest isolation prefix that works here: a network namespace (directly as root,
    else through a user namespace), plus dropping to ``nobody`` when we are root."""
    drop = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--")
    candidates: list[tuple[str, ...]] = []
    if shutil.which("unshare"):
        if os.geteuid() == 0:
            candidates.append(("unshare", "--net", "--", *drop) if shutil.which("setpriv") else ("unshare", "--net", "--"))
            candidates.append(("unshare", "--net", "--"))
        candidates.append(("unshare", "--user", "--map-root-user", "--net", "--"))
    for prefix in candidates:
        if _works(prefix):
            return prefix
    return ()


def _works(prefix: tuple[str, ...]) -> bool:
    try:
        done = subprocess.run([*prefix, sys.executable, "-I", "-S", "-c", "pass"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
