"""README's "Using it" examples run as written against `duet up --sim` (what `make run-sim` starts),
so they cannot rot: the curl call, the Responses API with the openai SDK, the Messages API with the
anthropic SDK and the openai-agents SDK agent with a function tool. Only the port changes (the
README's 8000 may be taken here), and the simulated replicas run 10x faster than real time without
calibration (speed only: the answers and the protocol are the same)."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from serving.ports import free_port

from .cluster import wait_until

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```(python|sh)\n(.*?)```", re.DOTALL)


def using_it_blocks() -> list[tuple[str, str]]:
    """The (language, code) blocks of the README's "Using it" section, in order."""
    text = README.read_text()
    section = text.split("\n## Using it\n", 1)[1].split("\n## ", 1)[0]
    return BLOCK.findall(section)


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("readme")
    port = free_port()
    log = tmp / "up.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "up", "--sim", "--port", str(port),
                                    "--no-calibrate", "--time-scale", "10"],
                                   stdout=out, stderr=subprocess.STDOUT, cwd=tmp)
    try:
        wait_until(lambda: "duet ready on" in log.read_text() or process.poll() is not None, 120, "duet up --sim")
        assert process.poll() is None, log.read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def run_shell(code: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", code.replace("http://127.0.0.1:8000", url)], capture_output=True, text=True,
                          timeout=120)


def run_python(code: str, url: str) -> None:
    """In this process (the SDKs are imported once, not per example: seconds each on a busy machine),
    in a namespace of its own, as ``python -c`` would run it."""
    exec(compile(code.replace("http://127.0.0.1:8000", url), "README.md", "exec"), {"__name__": "__main__"})


def test_the_section_holds_the_examples_it_promises() -> None:
    blocks = using_it_blocks()
    python = [code for language, code in blocks if language == "python"]
    assert len(python) == 3
    assert "client.responses.create" in python[0] and "anthropic.Anthropic" in python[1]
    assert "@function_tool" in python[2] and "Runner.run_sync" in python[2]
    assert all("http://127.0.0.1:8000" in code for _, code in blocks)


@pytest.mark.parametrize("index", range(len(using_it_blocks())), ids=[f"block{i}" for i in range(len(using_it_blocks()))])
def test_each_example_runs_as_written(gateway_url: str, index: int, capsys: pytest.CaptureFixture[str]) -> None:
    language, code = using_it_blocks()[index]
    if language == "python":
        run_python(code, gateway_url)
        assert capsys.readouterr().out.strip(), "the example printed nothing"
        return
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    done = run_shell(code, gateway_url)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "x-duet-variant:" in done.stdout.lower() and '"choices"' in done.stdout
