"""Children that never outlive the process that started them.

A replica left running when ``duet up`` or a test is killed outright (SIGKILL, a crash, the OOM
killer), which no ``finally`` survives to clean up, keeps a core, gigabytes and a port. Linux can
signal a child when its parent dies (``prctl(PR_SET_PDEATHSIG)``, kept across exec), two ways:

- ``die_with_parent()``: a ``preexec_fn`` for ``subprocess.Popen`` that arms SIGKILL in the child
  between fork and exec. Enough for a replica that is one process (the simulator).
- ``kept(argv)``: ``argv`` run under a keeper (``python -m serving.die_with_parent``), for a
  replica that is a process tree (vLLM: the API server, its engine core, its worker). The signal
  reaches the direct child only, and vLLM's engine core does not watch its parent (measured: it
  outlived a SIGKILLed API server by more than a minute), so the keeper, the group's leader, arms
  SIGUSR1 for itself and answers it by SIGKILLing its whole process group. A stop (SIGTERM to the
  group) reaches the replica directly; the keeper waits for it and exits as it did.

The kernel sends the signal when the *thread* that forked the child exits, not only the process:
spawn from a thread that lives as long as the child should (the main thread; the supervisor's
watcher, which stops its replicas itself before it ends). Linux only; elsewhere the
``preexec_fn`` is None and the keeper only runs its command.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
KEEPER_MODULE = "serving.die_with_parent"


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def _arm(prctl: Callable[..., int], sig: signal.Signals, parent: int) -> None:
    """Have the kernel send ``sig`` to this process when ``parent`` dies (at once if it already has)."""
    if prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # the parent died before the signal was armed
        os.kill(os.getpid(), sig)


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child die (SIGKILL) with the process calling this, or None
    where the kernel has no parent-death signal."""
    prctl = _prctl()  # resolved here, not in the forked child
    if prctl is None:
        return None
    parent = os.getpid()
    return lambda: _arm(prctl, signal.SIGKILL, parent)


def kept(argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` run under a keeper that takes its whole process group down (SIGKILL) when the
    process calling this dies. Start it as the leader of a new session (``start_new_session``)."""
    return (sys.executable, "-m", KEEPER_MODULE, "--parent", str(os.getpid()), "--", *argv)


def keep(parent: int, argv: Sequence[str]) -> int:
    """The keeper: run ``argv`` in this process group until it exits; SIGKILL the group if
    ``parent`` dies first. Returns the command's exit status (re-raising the signal that ended it)."""
    if os.getpgrp() != os.getpid():
        os.setpgid(0, 0)  # lead a group of its own: the SIGKILL below must not reach the caller's
    signal.signal(signal.SIGUSR1, lambda signum, frame: os.killpg(0, signal.SIGKILL))
    # A stop signals the whole group: the command ends itself; the keeper waits to report how.
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    prctl = _prctl()
    if prctl is not None:
        _arm(prctl, signal.SIGUSR1, parent)
    code = subprocess.Popen(argv).wait()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


def main(args: Sequence[str]) -> int:
    if len(args) < 4 or args[0] != "--parent" or args[2] != "--":
        print(f"usage: python -m {KEEPER_MODULE} --parent PID -- COMMAND...", file=sys.stderr)
        return 2
    return keep(int(args[1]), args[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
