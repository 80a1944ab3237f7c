"""The program the sandbox runs in its child process (passed with ``python -I -S -c``; not
imported by Duet). Standard library only: the child sees no site-packages.

It reads its settings as one JSON line on stdin (nonce, limits), lowers its resource limits,
installs an audit hook that refuses sockets, processes, native code and writes outside the
working directory, then runs ``solution.py`` and each test of ``tests.json`` in one namespace.
The last line it writes to its stdout is ``<nonce> <json result>``; the nonce (which the code
under test never sees on any channel it reads) keeps a printed fake result from counting.
"""

import json
import os
import resource
import signal
import sys
from collections.abc import Callable
from typing import Any

BLOCKED_PREFIXES = ("socket.", "ctypes.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "pty.")
BLOCKED_EVENTS = {"os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.startfile", "sys.addaudithook",
                  "os.setuid", "os.setgid", "resource.setrlimit", "resource.prlimit", "signal.pthread_kill"}
# Events whose first argument (and for these two, second) is a path that must stay inside.
PATH_EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
               "os.rename", "os.link", "os.symlink", "shutil.rmtree", "shutil.copyfile", "shutil.copymode",
               "shutil.copystat", "shutil.move", "os.chflags", "os.mkfifo", "os.mknod", "os.setxattr",
               "os.removexattr"}
TWO_PATH_EVENTS = {"os.rename", "os.link", "os.symlink", "shutil.copyfile", "shutil.move"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def main() -> None:
    settings = json.loads(sys.stdin.readline())
    os.close(0)  # nothing more to read: the code under test finds no nonce on stdin
    nonce, limits = settings["nonce"], settings["limits"]
    home = os.path.realpath(os.getcwd())
    lower_limits(limits)
    result_fd = os.dup(1)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the code's prints go nowhere
    with open("solution.py") as f:
        solution = f.read()
    with open("tests.json") as f:
        tests = json.load(f)
    sys.addaudithook(make_hook(home))
    outcome = run(solution, tests)
    os.write(result_fd, ("\n" + nonce + " " + json.dumps(outcome) + "\n").encode())
    os._exit(0)


def lower_limits(limits: dict[str, int]) -> None:
    memory = limits["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = limits["cpu_s"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    size = limits["file_bytes"]
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead


def make_hook(home: str) -> Callable[[str, tuple[Any, ...]], None]:
    def inside(path: Any) -> bool:
        if isinstance(path, int):
            return True  # an already open descriptor
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        full = os.path.realpath(os.path.join(home, os.fspath(path)))
        return full == home or full.startswith(home + os.sep)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in BLOCKED_EVENTS or event.startswith(BLOCKED_PREFIXES):
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event == "open":
            path, mode, flags = args
            writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & WRITE_FLAGS)
            if writes and not inside(path):
                raise PermissionError(f"sandbox: writing {path!r} outside the sandbox directory")
        elif event in PATH_EVENTS:
            paths = args[:2] if event in TWO_PATH_EVENTS else args[:1]
            for path in paths:
                if isinstance(path, str | bytes | os.PathLike) and not inside(path):
                    raise PermissionError(f"sandbox: {event} on {path!r} outside the sandbox directory")

    return hook


def run(solution: str, tests: list[str]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "solution"}
    try:
        exec(compile(solution, "solution.py", "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - any failure of the code under test is its verdict
        return {"passed": 0, "total": len(tests), "error": describe(exc)}
    passed, first_error = 0, ""
    for test in tests:
        try:
            exec(compile(test, "tests.json", "exec"), namespace)
            passed += 1
        except BaseException as exc:  # noqa: BLE001
            first_error = first_error or describe(exc)
    return {"passed": passed, "total": len(tests), "error": first_error or None}


def describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text[:300]


main()
