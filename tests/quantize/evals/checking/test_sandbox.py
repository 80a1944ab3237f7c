"""The coding sandbox: correct code passes, wrong code fails, and loops, memory bombs, writes
outside its directory, sockets, processes and fake results are stopped. Real subprocesses."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from quantize.evals.checking.sandbox import Limits, Sandbox, detect_isolation

TESTS = ["assert add_one(1) == 2", "assert add_one(-5) == -4"]


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(Limits(wall_s=5.0, cpu_s=2, memory_bytes=256 * 1024 * 1024))


def test_correct_solution_passes(sandbox: Sandbox) -> None:
    result = sandbox.run("def add_one(x):\n    return x + 1\n", TESTS)
    assert result.ok and (result.passed, result.total) == (2, 2)


def test_wrong_solution_fails(sandbox: Sandbox) -> None:
    result = sandbox.run("def add_one(x):\n    return x + 2\n", TESTS)
    assert result.status == "failed" and result.passed == 0 and "AssertionError" in result.detail


def test_partly_right_solution_fails_with_its_count(sandbox: Sandbox) -> None:
    result = sandbox.run("def add_one(x):\n    return 2 if x == 1 else 0\n", TESTS)
    assert result.status == "failed" and result.passed == 1


def test_code_that_raises_is_an_error(sandbox: Sandbox) -> None:
    assert sandbox.run("raise ValueError('no')\n", TESTS).status == "error"


def test_infinite_loop_is_stopped(sandbox: Sandbox) -> None:
    result = sandbox.run("def add_one(x):\n    while True:\n        pass\n", TESTS)
    assert result.status == "timeout" and not result.ok


def test_sleeping_forever_is_stopped_by_the_wall_clock(sandbox: Sandbox) -> None:
    result = sandbox.run("import time\ndef add_one(x):\n    time.sleep(3600)\n", TESTS)
    assert result.status == "timeout"


def test_memory_bomb_is_stopped(sandbox: Sandbox) -> None:
    bomb = "def add_one(x):\n    hoard = []\n    while True:\n        hoard.append(bytearray(50_000_000))\n"
    result = sandbox.run(bomb, TESTS)
    assert result.status == "memory" and not result.ok


def test_writing_outside_the_sandbox_fails(sandbox: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    os.chmod(tmp_path, 0o777)  # even where the kernel would let the child write, the hook refuses
    code = f"open({str(target)!r}, 'w').write('x')\ndef add_one(x):\n    return x + 1\n"
    result = sandbox.run(code, TESTS)
    assert result.status == "error" and "outside the sandbox" in result.detail
    assert not target.exists()


def test_writing_inside_the_sandbox_is_allowed(sandbox: Sandbox) -> None:
    code = "open('scratch.txt', 'w').write('x')\ndef add_one(x):\n    return x + 1\n"
    assert sandbox.run(code, TESTS).ok


def test_deleting_outside_the_sandbox_fails(sandbox: Sandbox, tmp_path: Path) -> None:
    victim = tmp_path / "keep.txt"
    victim.write_text("keep")
    os.chmod(tmp_path, 0o777)
    os.chmod(victim, 0o666)
    result = sandbox.run(f"import os\nos.remove({str(victim)!r})\n", TESTS)
    assert result.status == "error" and victim.exists()


def test_opening_a_socket_fails(sandbox: Sandbox) -> None:
    result = sandbox.run("import socket\nsocket.socket()\n", TESTS)
    assert result.status == "error" and "socket" in result.detail


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


def test_connecting_to_a_local_server_fails(sandbox: Sandbox, listener: int) -> None:
    code = f"import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{listener}/', timeout=2)\n"
    result = sandbox.run(code, TESTS)
    assert result.status == "error"


@pytest.mark.skipif(not detect_isolation(), reason="no network namespace available on this machine")
def test_the_network_namespace_alone_cuts_the_network(listener: int) -> None:
    """Without the audit hook (a plain interpreter under the isolation prefix) the loopback
    server the parent listens on is still unreachable."""
    connect = f"import socket\nsocket.create_connection(('127.0.0.1', {listener}), timeout=2)"
    done = subprocess.run([*detect_isolation(), sys.executable, "-I", "-c", connect], capture_output=True, timeout=30)
    assert done.returncode != 0
    assert b"unreachable" in done.stderr or b"refused" in done.stderr, done.stderr


@pytest.mark.parametrize("code", [
    "import os\nos.fork()\n",
    "import subprocess\nsubprocess.run(['true'])\n",
    "import os\nos.system('true')\n",
    "import ctypes\n",
])
def test_processes_and_native_code_are_refused(sandbox: Sandbox, code: str) -> None:
    result = sandbox.run(code, TESTS)
    assert result.status == "error" and "not allowed" in result.detail


def test_a_printed_fake_result_does_not_count(sandbox: Sandbox) -> None:
    code = "print('{\"passed\": 2, \"total\": 2, \"error\": null}')\nimport os\nos._exit(0)\n"
    result = sandbox.run(code, TESTS)
    assert result.status == "crashed" and not result.ok


def test_an_output_flood_is_capped(sandbox: Sandbox) -> None:
    result = sandbox.run("import os\nwhile True:\n    os.write(1, b'x' * 65536)\n", TESTS)
    assert not result.ok


def test_the_directory_is_removed_afterwards(sandbox: Sandbox) -> None:
    # Its own scratch root: other xdist workers run sandboxes in the shared temp directory at once.
    scratch = Path(tempfile.mkdtemp(prefix="duet-sandbox-test-"))
    try:
        scratch.chmod(0o711)  # the sandboxed user (nobody) must reach the run's directory
        own = Sandbox(sandbox.limits, sandbox.prefix, scratch=scratch)
        code = "import os\nopen('where.txt', 'w').write(os.getcwd())\ndef add_one(x):\n    return x + 1\n"
        assert own.run(code, TESTS).ok
        assert list(scratch.iterdir()) == []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_without_isolation_the_hook_and_limits_still_hold() -> None:
    bare = Sandbox(Limits(wall_s=5.0, cpu_s=2), prefix=())
    assert bare.run("def add_one(x):\n    return x + 1\n", TESTS).ok
    assert bare.run("import socket\nsocket.socket()\n", TESTS).status == "error"
