"""Start simulated replicas from tests in one line.

    with SimProcess("fast-test", "--time-scale", "10") as sim:
        client = openai.OpenAI(base_url=f"{sim.url}/v1", api_key="x")
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from types import TracebackType

from serving.die_with_parent import die_with_parent
from serving.ports import free_port


class SimProcess:
    """``python -m serving.sim`` on a free loopback port, ready (``/health`` 200) on enter. It dies
    with the process that started it (``serving.die_with_parent``): start it from a thread that
    lives as long as it should (``spawn`` there, ``wait_healthy`` anywhere)."""

    def __init__(self, profile: str = "fast-test", *args: str, port: int | None = None,
                 startup_timeout_s: float = 20.0, env: dict[str, str] | None = None,
                 wrapper: tuple[str, ...] = ()) -> None:
        self.profile = profile
        self.wrapper = wrapper  # a command to run the simulator under, e.g. ("taskset", "-c", "1")
        self.args = args
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.startup_timeout_s = startup_timeout_s
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> SimProcess:
        self.spawn()
        self.wait_healthy()
        return self

    def spawn(self) -> None:
        """Start the process, not waiting for it to answer."""
        command = [*self.wrapper, sys.executable, "-m", "serving.sim",
                   "--port", str(self.port), "--profile", self.profile, *self.args]
        self.process = subprocess.Popen(command, env={**os.environ, **(self.env or {})},
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=die_with_parent())

    def wait_healthy(self) -> None:
        """Block until ``/health`` answers 200; kill it and raise TimeoutError past the start-up
        timeout, RuntimeError if it exits."""
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                raise RuntimeError(f"simulator exited with {self.process.returncode}: {err}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=1.0) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)  # polling interval while the process boots
        self.kill()
        raise TimeoutError(f"simulator on port {self.port} not healthy after {self.startup_timeout_s} s")

    def kill(self) -> None:
        """SIGKILL: the replica dies as a crashed one does (connections cut, nothing flushed)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        """SIGTERM and wait; SIGKILL if it does not exit within 5 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> SimProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()
