"""Children that never outlive the process that started them.

``die_with_parent()`` returns a ``preexec_fn`` for ``subprocess.Popen``: between fork and exec the
child asks Linux to SIGKILL it when its parent dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, kept
across exec), so a replica is not left holding a core, gigabytes of memory and a port when
``duet up`` or a test is killed outright (SIGKILL, a crash, the OOM killer), which no ``finally``
survives to clean up.

The kernel sends the signal when the *thread* that forked the child exits, not only when the
process does: spawn from a thread that lives as long as the child should (the main thread; the
supervisor's watcher, which stops its replicas itself before it ends). It reaches the direct child
only: a child's own children (vLLM's engine core) are its business.

Linux only; elsewhere the returned function is None (``Popen``'s default: no ``preexec_fn``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child die (SIGKILL) with the process calling this, or None
    where the kernel has no parent-death signal."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not in the forked child
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()

    def in_child() -> None:
        if prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGKILL)

    return in_child
